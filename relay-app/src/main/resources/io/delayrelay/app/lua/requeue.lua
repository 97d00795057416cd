-- Takes members out of flight after a failed or expired delivery: back into the shard with a retry delay,
-- or, after too many attempts, into the dead set with a reason. Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:inflight  KEYS[3] {K:i}:attempts  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- {K:i}:attempts values are "<failed>:<original due>" (see pop.lua); the original due is kept.
-- ARGV[1] 'expired' (members whose lease ran out, at most ARGV[6]), 'members' (ARGV[7..]), or 'release'
--         (ARGV[7..] never reached the broker: back after the first retry delay, no attempt counted)
-- ARGV[2] max attempts: a member whose failed attempts reach it is dead
-- ARGV[3] retry delay in ms for the first failure; doubles per failed attempt
-- ARGV[4] retry delay cap in ms
-- ARGV[5] reason
-- ARGV[6] limit for 'expired'
-- Returns {requeued, deadCount, dead1, dead2, ...}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members
if ARGV[1] == 'expired' then
  members = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[6]))
else
  members = {}
  for i = 7, #ARGV do
    members[#members + 1] = ARGV[i]
  end
end
if #members == 0 then
  return {0, 0}
end
-- Before the first write, refuse keys of another type (written by another program): failing halfway would
-- lose members.
local expected = {'zset', 'zset', 'hash', 'zset', 'hash'}
for i = 1, #KEYS do
  local actual = redis.call('TYPE', KEYS[i]).ok
  if actual ~= 'none' and actual ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' is a ' .. actual .. ', expected a ' .. expected[i])
  end
end
local maxAttempts = tonumber(ARGV[2])
local base = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local requeued, dead = 0, {}
if ARGV[1] == 'release' then
  local at = string.format('%d', now + base)
  for _, m in ipairs(members) do
    if redis.call('ZREM', KEYS[2], m) == 1 then
      redis.call('ZADD', KEYS[1], 'NX', at, m)
      requeued = requeued + 1
    end
  end
  return {requeued, 0}
end
for _, m in ipairs(members) do
  if redis.call('ZREM', KEYS[2], m) == 1 then
    local mark = redis.call('HGET', KEYS[3], m)
    local attempts, origin = 0, ''
    if mark then
      local f, o = string.match(mark, '^(%d+):(.*)$')
      if f then
        attempts, origin = tonumber(f), o
      else
        attempts = tonumber(mark) or 0
      end
    end
    attempts = attempts + 1
    if attempts >= maxAttempts then
      redis.call('ZADD', KEYS[4], string.format('%d', now), m)
      redis.call('HSET', KEYS[5], m, ARGV[5] .. ' (attempts: ' .. attempts .. ')')
      redis.call('HDEL', KEYS[3], m)
      dead[#dead + 1] = m
    else
      redis.call('HSET', KEYS[3], m, attempts .. ':' .. origin)
      local delay = math.min(base * math.pow(2, attempts - 1), cap)
      redis.call('ZADD', KEYS[1], 'NX', string.format('%d', now + delay), m)
      requeued = requeued + 1
    end
  end
end
return {requeued, #dead, unpack(dead)}
