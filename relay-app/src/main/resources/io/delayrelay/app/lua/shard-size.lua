-- Entries a shard still holds, scheduled plus in flight plus waiting for a retry, read atomically (one slot).
-- KEYS[1] K:i   KEYS[2] {K:i}:inflight   KEYS[3] {K:i}:retry
return redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3])
