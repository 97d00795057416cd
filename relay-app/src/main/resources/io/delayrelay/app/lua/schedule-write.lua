-- Recurring schedules (docs/schedules.md): the tends of a batch of a business's schedules, atomic. For each schedule,
-- writes the slot entries the relay decided (entries by id '<name>@<slot ms>' in shard 0, payload stamped with the
-- schedule and slot), moves its cursor (every slot up to it is decided: written or skipped), sets its state fields,
-- adds its rare counts (skips, extra messages) and sets its next tick. Only if its cursor is still the one the relay
-- planned from: of two instances tending the same schedule one writes, the other writes nothing for it, so no slot is
-- ever written twice. Touches one Redis Cluster slot, shard 0's.
-- A batch costs the same few commands whatever its size: one HMGET of the cursors, one HSET (and at most one HDEL) of
-- the state fields, one HSET and one ZADD of the entries, one ZADD of the ticks; only a count goes by HINCRBY.
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule-state (fields '<name>:<field>')   KEYS[3] K:0
-- KEYS[4] {K:0}:payloads
-- ARGV[1] wake channel K:wake   ARGV[2] n, the schedules in the batch; then per schedule:
--   name, expected cursor ('' = none yet; '*' = no check, no cursor change: an extra message, e.g. "trigger now"),
--   'runtime' when it must still be a runtime-created schedule (deleted meanwhile: nothing written) else '',
--   new cursor, pending id (the last slot entry written, '' none), prev (the cursor before it), next tick ms ('inf'),
--   f then f pairs (state field, value; '' value deletes the field), c then c pairs (counter field, delta),
--   e then e triples (due ms, id, payload) of slot entries, in due order
-- Returns one element per schedule: 1 when written, 0 when its cursor moved meanwhile or it was deleted.
-- reads first: a shard key of the wrong type (another program's) fails the script before any state changes
redis.call('ZCARD', KEYS[3])
redis.call('HLEN', KEYS[4])
local tends, lookups = {}, {}
local at = 3
for s = 1, tonumber(ARGV[2]) do
  local t = {name = ARGV[at], expected = ARGV[at + 1], runtime = ARGV[at + 2] == 'runtime', at = at}
  t.fields = tonumber(ARGV[at + 7])
  t.f = at + 8
  t.counters = tonumber(ARGV[t.f + 2 * t.fields])
  t.c = t.f + 2 * t.fields + 1
  t.count = tonumber(ARGV[t.c + 2 * t.counters])
  t.e = t.c + 2 * t.counters + 1
  at = t.e + 3 * t.count
  if t.expected ~= '*' then
    t.lookup = #lookups + 1
    lookups[#lookups + 1] = t.name .. ':cursor'
    lookups[#lookups + 1] = t.name .. ':origin'
  end
  tends[s] = t
end
-- include: lib/hmget.lua
local found = hmget(KEYS[2], lookups, '')
local written = {}
local sets, dels, payloads, entries, ticks = {}, {}, {}, {}, {}
for s, t in ipairs(tends) do
  local ok = true
  if t.expected ~= '*' then
    ok = found[t.lookup] == t.expected and (not t.runtime or found[t.lookup + 1] == 'runtime')
  end
  written[s] = ok and 1 or 0
  if ok then
    local p = t.name .. ':'
    for i = 0, t.fields - 1 do
      local field, value = ARGV[t.f + 2 * i], ARGV[t.f + 2 * i + 1]
      if value == '' then
        dels[#dels + 1] = p .. field
      else
        sets[#sets + 1] = p .. field
        sets[#sets + 1] = value
      end
    end
    for i = 0, t.counters - 1 do
      redis.call('HINCRBY', KEYS[2], p .. ARGV[t.c + 2 * i], ARGV[t.c + 2 * i + 1])
    end
    for i = 0, t.count - 1 do
      local k = t.e + 3 * i
      payloads[#payloads + 1] = ARGV[k + 1]
      payloads[#payloads + 1] = ARGV[k + 2]
      entries[#entries + 1] = ARGV[k]
      entries[#entries + 1] = ARGV[k + 1]
    end
    if t.expected ~= '*' then
      local a = t.at
      sets[#sets + 1] = p .. 'cursor'
      sets[#sets + 1] = ARGV[a + 3]
      sets[#sets + 1] = p .. 'pending'
      sets[#sets + 1] = ARGV[a + 4]
      sets[#sets + 1] = p .. 'prev'
      sets[#sets + 1] = ARGV[a + 5]
      ticks[#ticks + 1] = ARGV[a + 6] == 'inf' and '+inf' or ARGV[a + 6]
      ticks[#ticks + 1] = t.name
    end
  end
end
-- unpack is bounded by Lua's stack: write in parts of at most 2,000 fields or entries
for i = 1, #dels, 4000 do
  redis.call('HDEL', KEYS[2], unpack(dels, i, math.min(i + 3999, #dels)))
end
for i = 1, #sets, 4000 do
  redis.call('HSET', KEYS[2], unpack(sets, i, math.min(i + 3999, #sets)))
end
if #entries > 0 then
  for i = 1, #payloads, 4000 do
    redis.call('HSET', KEYS[4], unpack(payloads, i, math.min(i + 3999, #payloads)))
    redis.call('ZADD', KEYS[3], unpack(entries, i, math.min(i + 3999, #entries)))
  end
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  for i = 2, #entries, 2 do
    if first[1] == entries[i] then
      redis.call('PUBLISH', ARGV[1], '0:' .. first[2])
    end
  end
end
for i = 1, #ticks, 4000 do
  redis.call('ZADD', KEYS[1], unpack(ticks, i, math.min(i + 3999, #ticks)))
end
return written
