-- Reads a shard's dead set size and the times of death of its oldest entries in one step (one slot), so the
-- dead-set trimmer never combines a size and a cutoff read at different moments (another replica may be trimming).
-- KEYS[1] {K:i}:dead   ARGV[1] how many of the oldest entries
-- Returns {size, score1, score2, ...} (scores as text, oldest first).
local out = {redis.call('ZCARD', KEYS[1])}
local oldest = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 2, #oldest, 2 do
  out[#out + 1] = oldest[i]
end
return out
