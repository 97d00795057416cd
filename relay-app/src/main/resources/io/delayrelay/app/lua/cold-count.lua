-- delay-relay cold tier: cold-count.lua (read only). Live cold entries of shard i: the sum of the member index's
-- sizes (a cancelled entry left the index; its bytes wait in its block until the block is promoted).
-- KEYS[1] {K:i}:cold-meta (the index {K:i}:cold-ix:<n>, n < fan, is built from its prefix: the same slot)
-- Returns {live entries, blocks}.
local prefix = string.sub(KEYS[1], 1, -10)
local fan = tonumber(redis.call('HMGET', KEYS[1], 'fan')[1])
if not fan then
  return {0, 0}
end
local n = 0
for s = 0, fan - 1 do
  n = n + redis.call('HLEN', prefix .. 'cold-ix:' .. s)
end
return {n, redis.call('HLEN', prefix .. 'cold-blocks')}
