-- delay-relay AMQP intake: intake-dead.lua. Keeps an intake message that cannot be scheduled (an unreadable
-- x-delay, a due time past max-delay, a message too large) as a dead letter with its reason, so it is listed, counted
-- and replayable like any other. Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:dead-reasons
-- ARGV[1] id  ARGV[2] payload (the intake envelope)  ARGV[3] reason
-- Returns 1, or 0 (nothing written) when the id is scheduled or in flight: its payload belongs to that entry, and
-- the caller dead-letters under another id.
-- Clock: one call of Redis TIME (the dead letter's score, its time of death).
local id = ARGV[1]
if redis.call('ZSCORE', KEYS[1], id) or redis.call('ZSCORE', KEYS[3], id) then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], id, ARGV[2])
redis.call('ZADD', KEYS[4], now, id)
redis.call('HSET', KEYS[5], id, ARGV[3])
return 1
