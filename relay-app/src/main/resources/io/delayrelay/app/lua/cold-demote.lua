-- delay-relay cold tier: cold-demote.lua. Moves entries of shard i into one cold block, atomically: the block is
-- stored and every entry still exactly as cold-pick.lua listed it (same due time, same payload, not in flight, not
-- dead) leaves K:i and {K:i}:payloads and is indexed as living in this block. An entry that changed meanwhile stays
-- hot: its copy in the block is never promoted (the index does not point at the block). So a relay killed before
-- this script moved nothing, one killed after it moved everything; two relays demoting the same entries at once
-- leave one live copy (the second finds them gone from K:i). docs/cold-tier.md has the whole argument.
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:dead
--   KEYS[5] {K:i}:cold        zset  block id -> earliest due time of its entries
--   KEYS[6] {K:i}:cold-blocks hash  block id -> block (compressed by the relay; opaque here)
--   KEYS[7] {K:i}:cold-meta   hash  fan = index fan-out, seq = last block id
--   The member index {K:i}:cold-ix:<n> (hash member -> block id[:due]) is n = cold-slot(member, fan), built from
--   KEYS[7]'s prefix: the same slot.
-- ARGV:
--   ARGV[1] index fan-out (used when KEYS[7] has none yet; a recorded one wins)
--   ARGV[2] the block's bytes
--   ARGV[3..] per entry: member, due ms, payload ('' when none), has payload '1'/'0'
-- Returns {entries moved, block id (0 when none moved)}.
-- Clock: none.
local prefix = string.sub(KEYS[7], 1, -10)
local meta = redis.call('HMGET', KEYS[7], 'fan', 'seq')
local fan = tonumber(meta[1] or ARGV[1])
local function ix(member)
  return prefix .. 'cold-ix:' .. (tonumber(string.sub(redis.sha1hex(member), 1, 6), 16) % fan)
end
local id = tostring((tonumber(meta[2]) or 0) + 1)
local moved, earliest = 0, nil
for k = 3, #ARGV, 4 do
  local member, due, payload, has = ARGV[k], tonumber(ARGV[k + 1]), ARGV[k + 2], ARGV[k + 3] == '1'
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score and tonumber(score) == due and not redis.call('ZSCORE', KEYS[3], member)
      and not redis.call('ZSCORE', KEYS[4], member) then
    local current = redis.call('HMGET', KEYS[2], member)[1]
    if (has and current == payload) or (not has and not current) then
      redis.call('ZREM', KEYS[1], member)
      if has then redis.call('HDEL', KEYS[2], member) end
      redis.call('HSET', ix(member), member, id)
      moved = moved + 1
      if not earliest or due < earliest then earliest = due end
    end
  end
end
if moved == 0 then
  return {0, 0}
end
redis.call('HSET', KEYS[7], 'fan', tostring(fan), 'seq', id)
redis.call('HSET', KEYS[6], id, ARGV[2])
redis.call('ZADD', KEYS[5], string.format('%d', earliest), id)
return {moved, tonumber(id)}
