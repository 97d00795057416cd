-- Recurring schedules (docs/schedules.md): a relay instance claims the business's schedules that are due to be tended.
-- A claimed schedule's tick moves ARGV[1] ms ahead, so the other instances leave it alone meanwhile; the tend that
-- follows sets its real next tick. A claim that is not followed by a tend (the instance died) lapses after ARGV[1] ms.
-- Touches one Redis Cluster slot, shard 0's: {K:0}:schedules and {K:0}:schedule:<name> (built from KEYS[1]'s prefix).
-- KEYS[1] {K:0}:schedules (zset: name -> when next tended)
-- ARGV[1] claim lease ms   ARGV[2] most schedules claimed at once
-- Returns {now, next tick after the claim or -1 when the business has no schedule, name 1, state 1, tick 1, name 2,
-- ...}: each state is the schedule's hash as HGETALL returns it; "tick" is when it was due to be tended (ms), so a tend
-- knows how late it comes. Per schedule claimed: one HGETALL; one ZADD for all the leases.
-- Clock: the script reads the time in exactly one call of Redis TIME.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix = string.sub(KEYS[1], 1, -10)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {now, -1}
local lapse = now + tonumber(ARGV[1])
local leases = {}
for i = 1, #due, 2 do
  local name = due[i]
  leases[#leases + 1] = lapse
  leases[#leases + 1] = name
  out[#out + 1] = name
  out[#out + 1] = redis.call('HGETALL', prefix .. 'schedule:' .. name)
  out[#out + 1] = math.floor(tonumber(due[i + 1]))
end
if #leases > 0 then
  redis.call('ZADD', KEYS[1], unpack(leases))
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then
  out[2] = tonumber(first[2])
end
return out
