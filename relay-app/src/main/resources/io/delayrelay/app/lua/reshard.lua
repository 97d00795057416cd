-- Records a business's shard count in K:meta for producers and other relay instances. One key.
-- KEYS[1] K:meta   ARGV[1] the shard count M in force
-- When M differs from the recorded one, the recorded one joins 'draining' (its shards >= M are still scanned
-- until empty) and 'history' (producers look there for entries to cancel or reschedule).
-- Returns the new 'draining' list.
local function parse(text)
  local list = {}
  if text then
    for v in string.gmatch(text, '[^,]+') do
      local n = tonumber(v)
      if n then list[#list + 1] = n end
    end
  end
  return list
end
local function keep(list, wanted, limit)
  local out, seen = {}, {}
  for _, v in ipairs(list) do
    if wanted(v) and not seen[v] and #out < limit then
      seen[v] = true
      out[#out + 1] = v
    end
  end
  return out
end
local new = tonumber(ARGV[1])
local old = tonumber(redis.call('HGET', KEYS[1], 'shards') or '')
local draining = parse(redis.call('HGET', KEYS[1], 'draining'))
local history = parse(redis.call('HGET', KEYS[1], 'history'))
if old and old ~= new then
  table.insert(draining, 1, old)
  table.insert(history, 1, old)
end
draining = keep(draining, function(v) return v > new end, 64)
history = keep(history, function(v) return v ~= new end, 8)
local drainingText = table.concat(draining, ',')
redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'draining', drainingText, 'history', table.concat(history, ','))
return drainingText
