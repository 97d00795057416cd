-- delay-relay cold tier: cold-count.lua (read only). Live cold entries of shard i: the sum of the member index's
-- sizes, less the drop requests (a cancelled entry left the index, or, indexed by digest, has a drop request; its
-- bytes wait in its block until the block is promoted).
-- KEYS[1] {K:i}:cold-meta (the index {K:i}:cold-ix:<n>, n < fan, and {K:i}:cold-drop are built from its prefix: the
-- same slot)
-- Returns {live entries, blocks}.
local prefix = string.sub(KEYS[1], 1, -10)
-- fan: "<fan-out>" (index rule 1) or "2:<fan-out>" (rule 2)
local recorded = redis.call('HMGET', KEYS[1], 'fan')[1]
if not recorded then
  return {0, 0}
end
local fan = tonumber(string.match(recorded, '(%d+)$'))
local n = 0
for s = 0, fan - 1 do
  n = n + redis.call('HLEN', prefix .. 'cold-ix:' .. s)
end
n = n - redis.call('HLEN', prefix .. 'cold-drop')
return {math.max(n, 0), redis.call('HLEN', prefix .. 'cold-blocks')}
