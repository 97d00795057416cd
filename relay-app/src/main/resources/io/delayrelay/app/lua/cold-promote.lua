-- delay-relay cold tier: cold-promote.lua. Brings one cold block of shard i back into K:i (and its payloads into
-- {K:i}:payloads), atomically, and deletes the block. Only entries the member index still points at this block are
-- live: one cancelled meanwhile (cancel.lua removed it from the index) or scheduled again (schedule.lua did, and the
-- new copy is hot) is skipped; one rescheduled (reschedule.lua wrote "<block>:<due>" into the index) comes back at
-- its new due time. A block already promoted (by another relay, or by this one before a kill) is not in
-- {K:i}:cold-blocks any more: nothing is done. docs/cold-tier.md has the argument.
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:cold   KEYS[4] {K:i}:cold-blocks   KEYS[5] {K:i}:cold-meta
--   The member index {K:i}:cold-ix:<n> is built from KEYS[5]'s prefix: the same slot.
-- ARGV:
--   ARGV[1] block id   ARGV[2] wake channel K:wake   ARGV[3] shard index i
--   ARGV[4..] per entry of the block (the relay decoded it): member, due ms, payload ('' when none), has payload
-- Returns {entries brought back, entries skipped} or {-1, 0} when the block was gone.
-- Clock: none.
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[4], id) == 0 then
  redis.call('ZREM', KEYS[3], id)
  return {-1, 0}
end
local prefix = string.sub(KEYS[5], 1, -10)
local fan = tonumber(redis.call('HMGET', KEYS[5], 'fan')[1])
local back, skipped, earliest, first = 0, 0, nil, nil
for k = 4, #ARGV, 4 do
  local member = ARGV[k]
  local ixKey = prefix .. 'cold-ix:' .. (tonumber(string.sub(redis.sha1hex(member), 1, 6), 16) % fan)
  local at = redis.call('HMGET', ixKey, member)[1]
  local blockOf, moved = string.match(at or '', '^(%d+):?(%d*)$')
  if blockOf == id then
    redis.call('HDEL', ixKey, member)
    -- a hot copy is newer (the contract scripts keep one live copy; this is defence in depth)
    if not redis.call('ZSCORE', KEYS[1], member) then
      local due = moved ~= '' and moved or ARGV[k + 1]
      redis.call('ZADD', KEYS[1], due, member)
      if ARGV[k + 3] == '1' then
        redis.call('HSET', KEYS[2], member, ARGV[k + 2])
      end
      back = back + 1
      if not earliest or tonumber(due) < earliest then earliest, first = tonumber(due), member end
    else
      skipped = skipped + 1
    end
  else
    skipped = skipped + 1
  end
end
redis.call('HDEL', KEYS[4], id)
redis.call('ZREM', KEYS[3], id)
if first then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if head[1] == first then
    redis.call('PUBLISH', ARGV[2], ARGV[3] .. ':' .. string.format('%d', earliest))
  end
end
return {back, skipped}
