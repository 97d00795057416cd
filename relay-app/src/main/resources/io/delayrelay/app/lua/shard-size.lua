-- Entries a shard still holds, read atomically (one slot): scheduled plus in flight (leased or waiting for a
-- retry), plus dead letters when KEYS[3] is given (a shard count is not retired while its dead sets hold letters).
-- KEYS[1] K:i   KEYS[2] {K:i}:inflight   KEYS[3] {K:i}:dead (optional)
local n = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2])
if KEYS[3] then
  n = n + redis.call('ZCARD', KEYS[3])
end
return n
