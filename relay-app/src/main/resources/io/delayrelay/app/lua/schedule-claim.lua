-- Recurring schedules (docs/schedules.md): a relay instance claims the business's schedules that are due to be tended.
-- A claimed schedule's tick moves ARGV[1] ms ahead, so the other instances leave it alone meanwhile; the tend that
-- follows sets its real next tick. A claim that is not followed by a tend (the instance died) lapses after ARGV[1] ms.
-- Touches one Redis Cluster slot, shard 0's.
-- KEYS[1] {K:0}:schedules (zset: name -> when next tended)   KEYS[2] {K:0}:schedule-state (fields '<name>:<field>')
-- ARGV[1] claim lease ms   ARGV[2] most schedules claimed at once   ARGV[3..] the state fields read per schedule
-- Returns {now, next tick after the claim or -1 when the business has no schedule, name 1, values 1, tick 1, name 2,
-- ...}: each values is one value per field of ARGV[3..], in that order ('' when absent); "tick" is when it was due to
-- be tended (ms), so a tend knows how late it comes. A claim costs the same few commands whatever it claims: one
-- ZRANGEBYSCORE, one ZADD for all the leases, one HMGET for all the states, one ZRANGE.
-- Clock: the script reads the time in exactly one call of Redis TIME.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {now, -1}
local lapse = now + tonumber(ARGV[1])
local nfields = #ARGV - 2
local leases, lookups = {}, {}
for i = 1, #due, 2 do
  leases[#leases + 1] = lapse
  leases[#leases + 1] = due[i]
  for f = 3, #ARGV do
    lookups[#lookups + 1] = due[i] .. ':' .. ARGV[f]
  end
end
-- include: lib/hmget.lua
local values = hmget(KEYS[2], lookups, '')
for i = 1, #due, 2 do
  local s = (i - 1) / 2
  local mine = {}
  for f = 1, nfields do
    mine[f] = values[s * nfields + f]
  end
  out[#out + 1] = due[i]
  out[#out + 1] = mine
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
