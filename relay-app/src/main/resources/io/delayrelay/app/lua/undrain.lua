-- Removes shard counts from K:meta 'draining' once their extra shards were found empty. One key.
-- KEYS[1] K:meta   ARGV[1] the shard count in force ('shards') the emptiness checks were made against
-- ARGV[2..] the shard counts to remove
-- Changes nothing when 'shards' changed since (the checks looked at the wrong shards): the caller checks again.
-- Returns the remaining 'draining' list.
local text = redis.call('HGET', KEYS[1], 'draining')
if redis.call('HGET', KEYS[1], 'shards') ~= ARGV[1] then
  return text or ''
end
local remove = {}
for i = 2, #ARGV do remove[ARGV[i]] = true end
local out = {}
if text then
  for v in string.gmatch(text, '[^,]+') do
    if not remove[v] then out[#out + 1] = v end
  end
end
local rest = table.concat(out, ',')
redis.call('HSET', KEYS[1], 'draining', rest)
return rest
