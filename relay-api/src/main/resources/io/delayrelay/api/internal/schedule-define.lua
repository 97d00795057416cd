-- Recurring schedules (docs/schedules.md): creates or replaces a runtime schedule's definition, in shard 0's slot.
-- Refuses (returns 0) a name that is a schedule declared in configuration (state origin 'config').
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule:<name>
-- ARGV[1] name, then pairs (field, value): the definition's def.* fields and any other fields to set (created-by)
-- Returns 1 when written (the schedule is tended at once: its tick is set to 0).
local origin = redis.call('HGET', KEYS[2], 'origin')
if origin and origin ~= 'runtime' then return 0 end
local old = redis.call('HGETALL', KEYS[2])
for i = 1, #old, 2 do
  if string.sub(old[i], 1, 4) == 'def.' then redis.call('HDEL', KEYS[2], old[i]) end
end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[2], 'origin', 'runtime')
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return 1
