-- Recurring schedules (docs/schedules.md): one tend of a schedule, atomic. Writes the slot entries the relay decided
-- (entries by id '<name>@<slot ms>' in shard 0, payload stamped with the schedule and slot), moves the schedule's
-- cursor (every slot up to it is decided: written or skipped), adds the skip counts and sets the next tick. Only if the
-- cursor is still the one the relay planned from: of two instances tending the same schedule one writes, the other
-- writes nothing, so no slot is ever written twice.
-- Touches one Redis Cluster slot, shard 0's.
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule:<name>   KEYS[3] K:0   KEYS[4] {K:0}:payloads
-- ARGV[1] name   ARGV[2] expected cursor ('' = the schedule has none yet; '*' = no check, no cursor change: an extra
--         message, e.g. "trigger now")   ARGV[3] 'runtime' when the schedule must still be a runtime-created one
--         (deleted meanwhile: nothing written), else ''
-- ARGV[4] new cursor   ARGV[5] pending id (the last slot entry written, '' none)   ARGV[6] prev (the cursor before it)
-- ARGV[7] next tick ms ('inf' for never)   ARGV[8] wake channel K:wake
-- ARGV[9] f: the count of state fields to set, then f pairs (field, value) ('' value deletes the field)
-- then c: the count of counters to add, then c pairs (field, delta)
-- then the slot entries, triples (due ms, id, payload), in due order
-- Returns {1} when written, {0, cursor found} when the cursor moved meanwhile (nothing written).
local expected = ARGV[2]
local cursor = redis.call('HGET', KEYS[2], 'cursor') or ''
if expected ~= '*' then
  if cursor ~= expected then
    return {0, cursor}
  end
  if ARGV[3] == 'runtime' and redis.call('HGET', KEYS[2], 'origin') ~= 'runtime' then
    return {0, 'deleted'}
  end
end
local at = 9
local fields = tonumber(ARGV[at])
-- one HSET (with the cursor's fields) and at most one HDEL for all the state's fields: each call counts
local sets, dels = {}, {}
for i = 1, fields do
  local field, value = ARGV[at + 2 * i - 1], ARGV[at + 2 * i]
  if value == '' then
    dels[#dels + 1] = field
  else
    sets[#sets + 1] = field
    sets[#sets + 1] = value
  end
end
local counted = at + 2 * fields + 1
local counters = tonumber(ARGV[counted])
local entries = counted + 2 * counters + 1
-- the slot entries first: a key of the wrong type (another program's) fails the script before the state changes
local earliest = nil
for i = entries, #ARGV, 3 do
  redis.call('HSET', KEYS[4], ARGV[i + 1], ARGV[i + 2])
  redis.call('ZADD', KEYS[3], ARGV[i], ARGV[i + 1])
  if not earliest then earliest = i end
end
if #dels > 0 then
  redis.call('HDEL', KEYS[2], unpack(dels))
end
for i = 1, counters do
  redis.call('HINCRBY', KEYS[2], ARGV[counted + 2 * i - 1], ARGV[counted + 2 * i])
end
if expected ~= '*' then
  sets[#sets + 1] = 'cursor'
  sets[#sets + 1] = ARGV[4]
  sets[#sets + 1] = 'pending'
  sets[#sets + 1] = ARGV[5]
  sets[#sets + 1] = 'prev'
  sets[#sets + 1] = ARGV[6]
  redis.call('ZADD', KEYS[1], ARGV[7] == 'inf' and '+inf' or ARGV[7], ARGV[1])
end
if #sets > 0 then
  redis.call('HSET', KEYS[2], unpack(sets))
end
if earliest then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)
  for i = entries, #ARGV, 3 do
    if first[1] == ARGV[i + 1] then
      redis.call('PUBLISH', ARGV[8], '0:' .. ARGV[i])
    end
  end
end
return {1}
