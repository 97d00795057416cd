-- Recurring schedules (docs/schedules.md): a relay instance claims the business's schedules that are due to be tended.
-- A claimed schedule's tick moves ARGV[1] ms ahead, so the other instances leave it alone meanwhile; the tend that
-- follows sets its real next tick. A claim that is not followed by a tend (the instance died) lapses after ARGV[1] ms.
-- Touches one Redis Cluster slot, shard 0's: {K:0}:schedules, {K:0}:schedule:<name> (built from KEYS[1]'s prefix), K:0.
-- KEYS[1] {K:0}:schedules (zset: name -> when next tended)   KEYS[2] K:0 (shard 0, where the slot entries go)
-- ARGV[1] claim lease ms   ARGV[2] most schedules claimed at once
-- Returns {now, next tick after the claim or -1 when the business has no schedule, name 1, state 1, pending 1 queued,
-- tick 1, name 2, ...}: each state is the schedule's hash as HGETALL returns it; "queued" is 1 when the state's pending
-- slot entry is still in K:0 (not popped yet); "tick" is when it was due to be tended (ms), so a tend knows how late
-- it comes.
-- Clock: the script reads the time in exactly one call of Redis TIME.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix = string.sub(KEYS[1], 1, -10)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local out = {now, -1}
local lapse = now + tonumber(ARGV[1])
for _, name in ipairs(due) do
  local tick = redis.call('ZSCORE', KEYS[1], name)
  redis.call('ZADD', KEYS[1], lapse, name)
  local state = redis.call('HGETALL', prefix .. 'schedule:' .. name)
  local queued = 0
  for i = 1, #state, 2 do
    if state[i] == 'pending' and state[i + 1] ~= '' and redis.call('ZSCORE', KEYS[2], state[i + 1]) then
      queued = 1
    end
  end
  out[#out + 1] = name
  out[#out + 1] = state
  out[#out + 1] = queued
  out[#out + 1] = math.floor(tonumber(tick))
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then
  out[2] = tonumber(first[2])
end
return out
