-- Recurring schedules (docs/schedules.md): withdraws a schedule's pending slot entry, if the relay has not popped it
-- and never tried to deliver it (no attempts mark), and moves the cursor back to before it; or deletes the schedule.
-- Used when the schedule was paused or redefined (a future slot), when its pending slot is overdue because no relay
-- ran (the catch-up policy then decides it), and by delete. An entry already popped is left to its delivery.
-- Only if the cursor is still the one the caller read. Touches one Redis Cluster slot, shard 0's.
-- KEYS[1] {K:0}:schedules   KEYS[2] {K:0}:schedule-state (fields '<name>:<field>')   KEYS[3] K:0
-- KEYS[4] {K:0}:payloads   KEYS[5] {K:0}:attempts
-- ARGV[1] name   ARGV[2] expected cursor   ARGV[3] 'revert' or 'delete'   ARGV[4] next tick ms (revert)
-- ARGV[5..] (delete) every state field a schedule may have: all of them are removed
-- Returns {1, withdrawn (1/0), cursor now}, or {0, cursor found} when the cursor moved meanwhile.
local p = ARGV[1] .. ':'
local cursor = redis.call('HGET', KEYS[2], p .. 'cursor') or ''
if ARGV[3] ~= 'delete' and cursor ~= ARGV[2] then
  return {0, cursor}
end
local pending = redis.call('HGET', KEYS[2], p .. 'pending') or ''
local withdrawn = 0
if pending ~= '' and redis.call('HEXISTS', KEYS[5], pending) == 0 then
  withdrawn = redis.call('ZREM', KEYS[3], pending)
  if withdrawn == 1 then
    redis.call('HDEL', KEYS[4], pending)
  end
end
if ARGV[3] == 'delete' then
  local fields = {}
  for i = 5, #ARGV do
    fields[#fields + 1] = p .. ARGV[i]
  end
  if #fields > 0 then
    redis.call('HDEL', KEYS[2], unpack(fields))
  end
  redis.call('ZREM', KEYS[1], ARGV[1])
  return {1, withdrawn, ''}
end
if withdrawn == 1 then
  local back = redis.call('HMGET', KEYS[2], p .. 'prev', p .. 'before-last')
  cursor = back[1] or ''
  redis.call('HSET', KEYS[2], p .. 'cursor', cursor, p .. 'pending', '', p .. 'last', back[2] or '')
end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
return {1, withdrawn, cursor}
