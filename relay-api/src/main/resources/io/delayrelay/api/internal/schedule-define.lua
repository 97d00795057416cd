-- Recurring schedules (docs/schedules.md): creates or replaces a runtime schedule's definition, in shard 0's slot.
-- Refuses (returns 0) a name that is a schedule declared in configuration (state origin 'config').
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule-state (fields '<name>:<field>')
-- ARGV[1] name   ARGV[2] n, then n definition fields to clear first (every def.* field the contract knows);
-- then pairs (field, value): the definition's def.* fields and any other fields to set (created-by, paused-by)
-- Returns 1 when written (the schedule is tended at once: its tick is set to 0).
local p = ARGV[1] .. ':'
local origin = redis.call('HGET', KEYS[2], p .. 'origin')
if origin and origin ~= 'runtime' then return 0 end
local n = tonumber(ARGV[2])
local clear, sets = {}, {}
for i = 3, 2 + n do clear[#clear + 1] = p .. ARGV[i] end
for i = 3 + n, #ARGV, 2 do
  sets[#sets + 1] = p .. ARGV[i]
  sets[#sets + 1] = ARGV[i + 1]
end
sets[#sets + 1] = p .. 'origin'
sets[#sets + 1] = 'runtime'
if n > 0 then redis.call('HDEL', KEYS[2], unpack(clear)) end
redis.call('HSET', KEYS[2], unpack(sets))
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return 1
