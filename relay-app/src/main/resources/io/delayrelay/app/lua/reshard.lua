-- Records a business's shard count in K:meta for producers and other relay instances. One key.
-- KEYS[1] K:meta   ARGV[1] the shard count M of the caller's configuration
-- ARGV[2] the caller's topology version (relay.topology-version): a configuration older than the one that wrote
--         K:meta last never writes: during a rolling update an old instance (starting, or reloading) must not put
--         its old count back over the new one. Equal versions: the last writer wins (one instance, or every
--         instance reloading the same change from the config center).
-- ARGV[3] (optional) the producers' fallback count F (relay-api's default-shards): when K:meta records no shard
--         count (never written, or lost: a Redis restart without persistence, eviction, a delete), producers have
--         been hashing into F, so F > M joins 'draining' and 'history' like an earlier count.
-- When M differs from the recorded one, the recorded one joins 'draining' (its shards >= M are still scanned
-- until empty) and 'history' (producers look there for entries to cancel or reschedule).
-- Returns {applied (1, or 0 when the caller's version is older), shards in force, draining list}.
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
local version = tonumber(ARGV[2])
local old = tonumber(redis.call('HGET', KEYS[1], 'shards') or '')
local stored = tonumber(redis.call('HGET', KEYS[1], 'topology-version') or '') or 0
local draining = parse(redis.call('HGET', KEYS[1], 'draining'))
if old and version < stored then
  return {0, old, table.concat(draining, ',')}
end
local history = parse(redis.call('HGET', KEYS[1], 'history'))
if old and old ~= new then
  table.insert(draining, 1, old)
  table.insert(history, 1, old)
end
local fallback = tonumber(ARGV[3] or '')
if not old and fallback and fallback > new then
  table.insert(draining, 1, fallback)
  table.insert(history, 1, fallback)
end
draining = keep(draining, function(v) return v > new end, 64)
history = keep(history, function(v) return v ~= new end, 8)
local drainingText = table.concat(draining, ',')
redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'draining', drainingText, 'history', table.concat(history, ','),
  'topology-version', string.format('%d', math.max(version, stored)))
return {1, new, drainingText}
