-- Recurring schedules (docs/schedules.md): withdraws a schedule's pending slot entry, if the relay has not popped it
-- and never tried to deliver it (no attempts mark), and moves the cursor back to before it; or deletes the schedule.
-- Used when the schedule was paused or redefined (a future slot), when its pending slot is overdue because no relay
-- ran (the catch-up policy then decides it), and by delete. An entry already popped is left to its delivery.
-- Only if the cursor is still the one the caller read. Touches one Redis Cluster slot, shard 0's.
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule:<name>   KEYS[3] K:0   KEYS[4] {K:0}:payloads
-- KEYS[5] {K:0}:attempts
-- ARGV[1] name   ARGV[2] expected cursor   ARGV[3] 'revert' or 'delete'   ARGV[4] next tick ms (revert)
-- Returns {1, withdrawn (1/0), cursor now}, or {0, cursor found} when the cursor moved meanwhile.
local cursor = redis.call('HGET', KEYS[2], 'cursor') or ''
if ARGV[3] ~= 'delete' and cursor ~= ARGV[2] then
  return {0, cursor}
end
local pending = redis.call('HGET', KEYS[2], 'pending') or ''
local withdrawn = 0
if pending ~= '' and redis.call('HEXISTS', KEYS[5], pending) == 0 then
  withdrawn = redis.call('ZREM', KEYS[3], pending)
  if withdrawn == 1 then
    redis.call('HDEL', KEYS[4], pending)
  end
end
if ARGV[3] == 'delete' then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], ARGV[1])
  return {1, withdrawn, ''}
end
if withdrawn == 1 then
  cursor = redis.call('HGET', KEYS[2], 'prev') or ''
  redis.call('HSET', KEYS[2], 'cursor', cursor, 'pending', '', 'last', redis.call('HGET', KEYS[2], 'before-last') or '')
end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
return {1, withdrawn, cursor}
