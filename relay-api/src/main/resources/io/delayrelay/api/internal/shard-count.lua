-- delay-relay relay-api: shard-count.lua (read only). Scheduled entries of shard i, hot and cold, for count().
-- KEYS[1] K:i   KEYS[2] {K:i}:cold-meta (the cold member index {K:i}:cold-ix:<n>, n < fan, is built from its
-- prefix, and so is {K:i}:cold-drop: the same slot; docs/cold-tier.md)
-- Returns {entries in K:i, live cold entries}. Without {K:i}:cold-meta nothing is cold and no HLEN is called (so a
-- producer ACL without +hlen can count a business that has no cold tier).
-- Clock: none.
local hot = redis.call('ZCARD', KEYS[1])
-- fan: "<fan-out>" (index rule 1) or "2:<fan-out>" (rule 2)
local recorded = redis.call('HMGET', KEYS[2], 'fan')[1]
if not recorded then
  return {hot, 0}
end
local fan = tonumber(string.match(recorded, '(%d+)$'))
local prefix = string.sub(KEYS[2], 1, -10)
local cold = 0
for s = 0, fan - 1 do
  cold = cold + redis.call('HLEN', prefix .. 'cold-ix:' .. s)
end
-- entries indexed by digest and cancelled (or scheduled again) keep their index field until the relay brings their
-- block back: their drop requests are not counted
cold = cold - redis.call('HLEN', prefix .. 'cold-drop')
return {hot, math.max(cold, 0)}
