-- Recurring schedules (docs/schedules.md): the tends of a batch of a business's schedules, atomic. For each schedule,
-- writes the slot entries the relay decided (entries by id '<name>@<slot ms>' in shard 0, payload stamped with the
-- schedule and slot), moves its cursor (every slot up to it is decided: written or skipped), adds its skip counts and
-- sets its next tick. Only if its cursor is still the one the relay planned from: of two instances tending the same
-- schedule one writes, the other writes nothing for it, so no slot is ever written twice.
-- Touches one Redis Cluster slot, shard 0's: the state keys {K:0}:schedule:<name> are built from KEYS[1]'s prefix.
-- The batch's entries go in one HSET and one ZADD, its ticks in one ZADD: a tend costs three commands of its own
-- (the cursor's HGET, the state's HSET, the written count's HINCRBY).
-- KEYS[1] {K:0}:schedules   KEYS[2] K:0   KEYS[3] {K:0}:payloads
-- ARGV[1] wake channel K:wake   ARGV[2] n, the schedules in the batch; then per schedule:
--   name, expected cursor ('' = none yet; '*' = no check, no cursor change: an extra message, e.g. "trigger now"),
--   'runtime' when it must still be a runtime-created schedule (deleted meanwhile: nothing written) else '',
--   new cursor, pending id (the last slot entry written, '' none), prev (the cursor before it), next tick ms ('inf'),
--   f then f pairs (state field, value; '' value deletes the field), c then c pairs (counter field, delta),
--   e then e triples (due ms, id, payload) of slot entries, in due order
-- Returns one element per schedule: 1 when written, 0 when its cursor moved meanwhile or it was deleted.
local prefix = string.sub(KEYS[1], 1, -10)
-- reads first: a shard key of the wrong type (another program's) fails the script before any state changes
redis.call('ZCARD', KEYS[2])
redis.call('HLEN', KEYS[3])
local at = 3
local written = {}
local payloads, entries, ticks = {}, {}, {}
for s = 1, tonumber(ARGV[2]) do
  local name, expected, runtime = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  local cursor, pending, prev, tick = ARGV[at + 3], ARGV[at + 4], ARGV[at + 5], ARGV[at + 6]
  local stateKey = prefix .. 'schedule:' .. name
  local fields = tonumber(ARGV[at + 7])
  local f = at + 8
  local counters = tonumber(ARGV[f + 2 * fields])
  local c = f + 2 * fields + 1
  local count = tonumber(ARGV[c + 2 * counters])
  local e = c + 2 * counters + 1
  at = e + 3 * count
  local ok = true
  if expected ~= '*' then
    ok = (redis.call('HGET', stateKey, 'cursor') or '') == expected
    if ok and runtime == 'runtime' then
      ok = redis.call('HGET', stateKey, 'origin') == 'runtime'
    end
  end
  written[s] = ok and 1 or 0
  if ok then
    local sets, dels = {}, {}
    for i = 0, fields - 1 do
      local field, value = ARGV[f + 2 * i], ARGV[f + 2 * i + 1]
      if value == '' then
        dels[#dels + 1] = field
      else
        sets[#sets + 1] = field
        sets[#sets + 1] = value
      end
    end
    for i = 0, count - 1 do
      local k = e + 3 * i
      payloads[#payloads + 1] = ARGV[k + 1]
      payloads[#payloads + 1] = ARGV[k + 2]
      entries[#entries + 1] = ARGV[k]
      entries[#entries + 1] = ARGV[k + 1]
    end
    if #dels > 0 then
      redis.call('HDEL', stateKey, unpack(dels))
    end
    for i = 0, counters - 1 do
      redis.call('HINCRBY', stateKey, ARGV[c + 2 * i], ARGV[c + 2 * i + 1])
    end
    if expected ~= '*' then
      for _, v in ipairs({'cursor', cursor, 'pending', pending, 'prev', prev}) do
        sets[#sets + 1] = v
      end
      ticks[#ticks + 1] = tick == 'inf' and '+inf' or tick
      ticks[#ticks + 1] = name
    end
    if #sets > 0 then
      redis.call('HSET', stateKey, unpack(sets))
    end
  end
end
if #entries > 0 then
  -- unpack is bounded by Lua's stack: write in parts of at most 1,000 entries
  for i = 1, #payloads, 2000 do
    redis.call('HSET', KEYS[3], unpack(payloads, i, math.min(i + 1999, #payloads)))
    redis.call('ZADD', KEYS[2], unpack(entries, i, math.min(i + 1999, #entries)))
  end
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  for i = 2, #entries, 2 do
    if first[1] == entries[i] then
      redis.call('PUBLISH', ARGV[1], '0:' .. first[2])
    end
  end
end
if #ticks > 0 then
  redis.call('ZADD', KEYS[1], unpack(ticks))
end
return written
