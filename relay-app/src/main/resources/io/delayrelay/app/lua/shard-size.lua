-- Entries a shard still holds, read atomically (one slot): scheduled plus in flight (leased or waiting for a
-- retry), plus dead letters when KEYS[3] is given (a shard count is not retired while its dead sets hold letters),
-- plus the shard's cold blocks when KEYS[4] is given (a shard count is not retired while its cold tier holds a block:
-- its entries come back to K:i only when the mover promotes the block; docs/cold-tier.md).
-- KEYS[1] K:i   KEYS[2] {K:i}:inflight   KEYS[3] {K:i}:dead (optional)   KEYS[4] {K:i}:cold (optional)
local n = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2])
if KEYS[3] then
  n = n + redis.call('ZCARD', KEYS[3])
end
if KEYS[4] then
  n = n + redis.call('ZCARD', KEYS[4])
end
return n
