-- One ZSCAN step over a shard for the console's search, so the caller sees every step's cursor and can stop after
-- a bounded number of entries scanned (Spring's scan cursor hides the steps: a prefix that matches nothing would
-- walk the whole shard inside one call). Reads only. Touches one Redis Cluster slot.
-- KEYS[1] K:i   ARGV[1] cursor ('0' to start)   ARGV[2] MATCH pattern   ARGV[3] COUNT
-- Returns {next cursor ('0': done), member1, score1, member2, score2, ...}
local r = redis.call('ZSCAN', KEYS[1], ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local out = {r[1]}
for _, v in ipairs(r[2]) do
  out[#out + 1] = v
end
return out
