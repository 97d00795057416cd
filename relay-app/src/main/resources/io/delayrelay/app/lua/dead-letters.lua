-- Acts on dead letters of one shard (one Redis Cluster slot): takes them out of the dead set, forgets the
-- reason, and then
--   'replay': delivers each again as a new delivery due now (Redis time), waiting in {K:i}:inflight like a retry
--             (see pop.lua), so a schedule of the same member in K:i is not touched and still fires at its own
--             time. A dead letter whose member has an unsettled delivery (in {K:i}:inflight) is left dead and not
--             counted: replay it once that settled. Its payload, kept since it died, is published as usual;
--   'purge':  deletes its payload unless the member is still scheduled or being delivered (K:i, inflight).
-- Payload invariant: {K:i}:payloads[id] is deleted only by a script that leaves the id in none of K:i,
-- {K:i}:inflight and {K:i}:dead.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- KEYS[6] {K:i}:attempts
-- ARGV[1] 'replay' or 'purge'
-- ARGV[2] 'oldest' (the oldest ARGV[3] dead letters) or 'members' (ARGV[3..])
-- Returns how many dead letters were acted on.
-- Every key's type is checked before the first write: Lua writes are not rolled back, so a dead entry removed
-- before a write that then fails (a key of the wrong type) would be lost.
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local expected = {'zset', 'hash', 'zset', 'zset', 'hash', 'hash'}
for i = 1, #KEYS do
  local actual = redis.call('TYPE', KEYS[i]).ok
  if actual ~= 'none' and actual ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' is a ' .. actual .. ', expected a ' .. expected[i])
  end
end
local members
if ARGV[2] == 'oldest' then
  members = redis.call('ZRANGE', KEYS[4], 0, tonumber(ARGV[3]) - 1)
else
  members = {}
  for i = 3, #ARGV do
    members[#members + 1] = ARGV[i]
  end
end
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local done = 0
for _, m in ipairs(members) do
  if redis.call('ZSCORE', KEYS[4], m) then
    local inFlight = redis.call('ZSCORE', KEYS[3], m)
    if ARGV[1] == 'replay' then
      if not inFlight then
        redis.call('ZREM', KEYS[4], m)
        redis.call('HDEL', KEYS[5], m)
        -- a new delivery: no failed attempts, its own due time (and so its own AMQP message id), no lease yet
        redis.call('HSET', KEYS[6], m, '0:' .. now .. ':')
        redis.call('ZADD', KEYS[3], now, m)
        done = done + 1
      end
    else
      redis.call('ZREM', KEYS[4], m)
      redis.call('HDEL', KEYS[5], m)
      if not inFlight and not redis.call('ZSCORE', KEYS[1], m) then
        redis.call('HDEL', KEYS[2], m)
      end
      done = done + 1
    end
  end
end
return done
