-- Reads a shard's dead set size and its oldest entries in one step (one slot), so the dead-set trimmer never
-- combines a size and a read of the oldest made at different moments (another replica may be trimming).
-- KEYS[1] {K:i}:dead   ARGV[1] how many of the oldest entries
-- Returns {size, member1, score1, member2, score2, ...} (oldest first; scores as text).
local out = {redis.call('ZCARD', KEYS[1])}
local oldest = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #oldest do
  out[#out + 1] = oldest[i]
end
return out
