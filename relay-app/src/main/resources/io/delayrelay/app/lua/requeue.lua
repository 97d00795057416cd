-- Takes leased members out of flight after a failed or expired delivery: into {K:i}:retry, due after a retry
-- delay, or, after too many attempts, into the dead set with a reason. Touches one Redis Cluster slot.
-- A retry waits in the relay-owned {K:i}:retry, never in K:i: a producer's new schedule of the same member (in K:i)
-- is a delivery of its own, so the failed copy is retried at its retry time and the new one at its own time.
-- KEYS[1] {K:i}:inflight  KEYS[2] {K:i}:retry  KEYS[3] {K:i}:leases  KEYS[4] {K:i}:attempts (legacy, read once)
-- KEYS[5] {K:i}:dead  KEYS[6] {K:i}:dead-reasons
-- {K:i}:leases values are "<failed>:<original due>:<token>" (see pop.lua); the original due is kept.
-- ARGV[1] 'expired' (members whose lease ran out, at most ARGV[6], whoever leased them), 'members' (ARGV[8..]),
--         or 'release' (ARGV[8..] never reached the broker: retried after the first retry delay, no attempt
--         counted). 'members' and 'release' act only on members still leased with token ARGV[7].
-- ARGV[2] max attempts: a member whose failed attempts reach it is dead
-- ARGV[3] retry delay in ms for the first failure; doubles per failed attempt
-- ARGV[4] retry delay cap in ms
-- ARGV[5] reason
-- ARGV[6] limit for 'expired'
-- ARGV[7] lease token for 'members' and 'release'
-- The payload is never touched: a retry and a dead letter both still need it.
-- Returns {requeued, deadCount, dead1, dead2, ...}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members
if ARGV[1] == 'expired' then
  members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[6]))
else
  members = {}
  for i = 8, #ARGV do
    members[#members + 1] = ARGV[i]
  end
end
if #members == 0 then
  return {0, 0}
end
-- Before the first write, refuse keys of another type (written by another program): failing halfway would
-- lose members.
local expected = {'zset', 'zset', 'hash', 'hash', 'zset', 'hash'}
for i = 1, #KEYS do
  local actual = redis.call('TYPE', KEYS[i]).ok
  if actual ~= 'none' and actual ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' is a ' .. actual .. ', expected a ' .. expected[i])
  end
end
local records = redis.call('HMGET', KEYS[3], unpack(members))
local legacy = redis.call('HMGET', KEYS[4], unpack(members))
local leased = redis.call('ZMSCORE', KEYS[1], unpack(members))
local maxAttempts = tonumber(ARGV[2])
local base = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local release = ARGV[1] == 'release'
local requeued, dead = 0, {}
for i, m in ipairs(members) do
  local failed, origin, owner
  local r = records[i]
  if r then
    local f, o, tk = string.match(r, '^(%d+):([^:]*):(.*)$')
    failed, origin, owner = tonumber(f) or 0, o or '', tk
  else
    -- leased by an earlier relay version: its mark is "<failed>:<original due>" in {K:i}:attempts
    failed, origin = 0, ''
    local mark = legacy[i]
    if mark then
      local f, o = string.match(mark, '^(%d+):(.*)$')
      if f then
        failed, origin = tonumber(f), o
      else
        failed = tonumber(mark) or 0
      end
    end
  end
  local mine = leased[i] and (ARGV[1] == 'expired' or (owner ~= nil and owner == ARGV[7]))
  if mine then
    redis.call('ZREM', KEYS[1], m)
    redis.call('HDEL', KEYS[4], m)
    if not release then
      failed = failed + 1
    end
    if not release and failed >= maxAttempts then
      redis.call('ZADD', KEYS[5], string.format('%d', now), m)
      redis.call('HSET', KEYS[6], m, ARGV[5] .. ' (attempts: ' .. failed .. ')')
      redis.call('HDEL', KEYS[3], m)
      dead[#dead + 1] = m
    else
      local delay = base
      if not release then
        delay = math.min(base * math.pow(2, failed - 1), cap)
      end
      redis.call('HSET', KEYS[3], m, failed .. ':' .. origin .. ':')
      redis.call('ZADD', KEYS[2], string.format('%d', now + delay), m)
      requeued = requeued + 1
    end
  end
end
return {requeued, #dead, unpack(dead)}
