-- Entries a shard still holds, scheduled plus in flight, read atomically (one slot).
-- KEYS[1] K:i   KEYS[2] {K:i}:inflight
return redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2])
