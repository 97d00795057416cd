-- settle(s, token, anyPayload, members): settles ack section s, the one copy of this logic. ack.lua and pop.lua
-- include it ("-- include: lib/settle.lua", replaced by this file when LuaScripts loads them).
-- Forgets each member's delivery, but only the one this caller leased (its lease token is the one in
-- {K:i}:attempts, see pop.lua). A late ack of a lease already taken back, or of a member leased again since, changes
-- nothing. The section's five keys are KEYS[(s - 1) * 5 + 1..5]: K:i, {K:i}:payloads, {K:i}:inflight,
-- {K:i}:attempts, {K:i}:dead. anyPayload '0': none of the members had a payload when popped, so a payload hash
-- that does not exist spares the payload bookkeeping (two ZMSCOREs and an HDEL).
-- Payload invariant (kept by every script, the relay's and the producers'): {K:i}:payloads[id] is deleted only by
-- a script that leaves the id in none of K:i, {K:i}:inflight and {K:i}:dead. So a payload is kept when its member
-- was scheduled again meanwhile (back in K:i) or is also a dead letter (a replay needs it).
-- Returns how many members were settled, or an error reply naming a payloads key of the wrong type.

-- payload hashes known not to exist (read by a settle; nothing in the including scripts writes one later)
local noPayloads = {}

local function settle(s, token, anyPayload, members)
  local function key(i)
    return KEYS[(s - 1) * 5 + i]
  end
  if #members == 0 then return 0 end
  -- Reads first, then the writes in an order that makes a key of the wrong type (written by another program) fail
  -- harmlessly, without TYPE checks: HMGET attempts and the ZMSCOREs fail before anything changed; ZREM inflight
  -- is the first write and fails with nothing written; HDEL attempts cannot fail (attempts was read as a hash).
  -- Only a payloads key of the wrong type is met after the leases were settled: those messages were confirmed, so
  -- nothing is lost, and the payload of such a message could not have been stored in it. The error then names the
  -- key (the relay counts and logs it), and the shard's next pop fails on it before moving anything.
  local records = redis.call('HMGET', key(4), unpack(members))
  -- A payload written while the member was in flight (a producer scheduled the id again) makes the hash exist, so
  -- the payload invariant below is always checked where a payload can be.
  local payloads = anyPayload ~= '0' or (not noPayloads[key(2)] and redis.call('EXISTS', key(2)) == 1)
  if not payloads then noPayloads[key(2)] = true end
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
