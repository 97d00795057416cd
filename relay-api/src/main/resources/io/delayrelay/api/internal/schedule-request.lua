-- Recurring schedules (docs/schedules.md): an operator's request on an existing schedule (pause, resume, delete),
-- written into its state for the relay to act on at its next tend, which is brought forward to now.
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule-state (fields '<name>:<field>')
-- ARGV[1] name   ARGV[2] field   ARGV[3] value ('' removes the field)   ARGV[4] '1': only a runtime-created schedule
-- Returns 1 when written, 0 when there is no such schedule, -1 when it is declared in configuration and ARGV[4] is '1'.
-- A schedule exists once it is listed for tending (a relay lists its configured ones at start) or has a state.
local p = ARGV[1] .. ':'
local origin = redis.call('HGET', KEYS[2], p .. 'origin')
if not origin and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
if ARGV[4] == '1' and origin ~= 'runtime' then return -1 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[2], p .. ARGV[2])
else
  redis.call('HSET', KEYS[2], p .. ARGV[2], ARGV[3])
end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return 1
