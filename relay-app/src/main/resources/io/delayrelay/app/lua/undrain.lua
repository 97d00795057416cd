-- Removes shard counts from K:meta 'draining' once their extra shards were found empty. One key.
-- KEYS[1] K:meta   ARGV the shard counts to remove
-- Returns the remaining 'draining' list.
local remove = {}
for _, v in ipairs(ARGV) do remove[v] = true end
local out = {}
local text = redis.call('HGET', KEYS[1], 'draining')
if text then
  for v in string.gmatch(text, '[^,]+') do
    if not remove[v] then out[#out + 1] = v end
  end
end
local rest = table.concat(out, ',')
redis.call('HSET', KEYS[1], 'draining', rest)
return rest
