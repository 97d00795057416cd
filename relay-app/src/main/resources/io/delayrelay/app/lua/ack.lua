-- Settles deliveries the broker confirmed: forgets each member's delivery, but only the one this caller leased
-- (its lease token is the one in {K:i}:attempts, see pop.lua). A late ack of a lease the reaper already took back,
-- or of a member leased again since, changes nothing. Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts  KEYS[5] {K:i}:dead
-- ARGV[1] lease token
-- ARGV[2] '0' when none of the members had a payload when popped: then a payload hash that does not exist (the
--         common case of a business that never schedules by id) spares the payload bookkeeping (two ZMSCOREs and
--         an HDEL); '1' (or anything else) always does it
-- ARGV[3..] members
-- Payload invariant (kept by every script, the relay's and the producers'): {K:i}:payloads[id] is deleted only by
-- a script that leaves the id in none of K:i, {K:i}:inflight and {K:i}:dead. So a payload is kept when its member
-- was scheduled again meanwhile (back in K:i) or is also a dead letter (a replay needs it).
-- Returns how many members were settled (still leased with this token).
-- Several shards in one call (standalone Redis only: a cluster refuses keys of several slots): KEYS holds the five
-- keys above once per shard, and ARGV one section per shard: lease token, payload flag (as ARGV[2]), member count,
-- members. Each shard is settled as above, only its members leased under its section's token. Returns the total
-- settled; a shard whose keys hold the wrong type fails the call (the shards before it are settled, the caller acks
-- the shards one by one to find it: settling twice changes nothing).
local function settle(g, token, anyPayload, members)
  local function key(i)
    return KEYS[(g - 1) * 5 + i]
  end
  if #members == 0 then return 0 end
  -- Reads first, then the writes in an order that makes a key of the wrong type (written by another program) fail
  -- harmlessly, without TYPE checks: HMGET attempts and the ZMSCOREs fail before anything changed; ZREM inflight
  -- is the first write and fails with nothing written; HDEL attempts cannot fail (attempts was read as a hash).
  -- Only a payloads key of the wrong type is met after the leases were settled: those messages were confirmed, so
  -- nothing is lost, and the payload of such a message could not have been stored in it. The script then returns
  -- an error naming the key (the relay counts and logs it), and the shard's next pop fails on it before moving
  -- anything.
  local records = redis.call('HMGET', key(4), unpack(members))
  -- A payload written while the member was in flight (a producer scheduled the id again) makes the hash exist, so
  -- the payload invariant below is always checked where a payload can be.
  local payloads = anyPayload ~= '0' or redis.call('EXISTS', key(2)) == 1
  local again, dead = {}, {}
  if payloads then
    again = redis.call('ZMSCORE', key(1), unpack(members))
    dead = redis.call('ZMSCORE', key(5), unpack(members))
  end
  local owned, drop = {}, {}
  for i, m in ipairs(members) do
    local r = records[i]
    if r and string.match(r, '^%d+:[^:]*:(.*)$') == token then
      owned[#owned + 1] = m
      if payloads and not again[i] and not dead[i] then
        drop[#drop + 1] = m
      end
    end
  end
  if #owned > 0 then
    redis.call('ZREM', key(3), unpack(owned))
    redis.call('HDEL', key(4), unpack(owned))
  end
  if #drop > 0 then
    local deleted = redis.pcall('HDEL', key(2), unpack(drop))
    if type(deleted) == 'table' and deleted.err then
      return redis.error_reply('WRONGTYPE ' .. key(2) .. ' is not a hash (' .. deleted.err .. '); ' .. #owned
          .. ' confirmed member(s) were settled, their payloads could not be deleted')
    end
  end
  return #owned
end

if #KEYS == 5 then
  local members = {}
  for i = 3, #ARGV do members[#members + 1] = ARGV[i] end
  return settle(1, ARGV[1], ARGV[2], members)
end
local total, at = 0, 1
for g = 1, #KEYS / 5 do
  local token, anyPayload, n = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  local members = {}
  for i = 1, n do members[i] = ARGV[at + 2 + i] end
  at = at + 3 + n
  local settled = settle(g, token, anyPayload, members)
  if type(settled) == 'table' then return settled end
  total = total + settled
end
return total
