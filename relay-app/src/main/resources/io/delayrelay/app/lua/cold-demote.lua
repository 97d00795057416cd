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
-- Cost: a few commands per block (ZMSCORE, HMGET, ZREM, HDEL of all its members at once, one HSET per index part),
-- not one call per entry; sha1hex per entry for its index part.
local prefix = string.sub(KEYS[7], 1, -10)
local meta = redis.call('HMGET', KEYS[7], 'fan', 'seq')
local fan = tonumber(meta[1] or ARGV[1])
local function ix(member)
  return prefix .. 'cold-ix:' .. (tonumber(string.sub(redis.sha1hex(member), 1, 6), 16) % fan)
end
-- one command for many members, in slices that stay within Lua's stack
local function many(command, key, args)
  local reply = {}
  for i = 1, #args, 1000 do
    local part = redis.call(command, key, unpack(args, i, math.min(#args, i + 999)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do reply[#reply + 1] = v end
    end
  end
  return reply
end
local id = tostring((tonumber(meta[2]) or 0) + 1)
local members = {}
for k = 3, #ARGV, 4 do members[#members + 1] = ARGV[k] end
if #members == 0 then
  return {0, 0}
end
local scores = many('ZMSCORE', KEYS[1], members)
local inflight, dead = {}, {}
if redis.call('ZCARD', KEYS[3]) > 0 or redis.call('ZCARD', KEYS[4]) > 0 then
  inflight = many('ZMSCORE', KEYS[3], members)
  dead = many('ZMSCORE', KEYS[4], members)
end
local current = many('HMGET', KEYS[2], members)
local gone, drop, parts = {}, {}, {}
local moved, earliest = 0, nil
for j, member in ipairs(members) do
  local k = 4 * j - 1
  local due, payload, has = tonumber(ARGV[k + 1]), ARGV[k + 2], ARGV[k + 3] == '1'
  if scores[j] and tonumber(scores[j]) == due and not inflight[j] and not dead[j]
      and ((has and current[j] == payload) or (not has and not current[j])) then
    gone[#gone + 1] = member
    if has then drop[#drop + 1] = member end
    local part = ix(member)
    local fields = parts[part]
    if not fields then
      fields = {}
      parts[part] = fields
    end
    fields[#fields + 1] = member
    fields[#fields + 1] = id
    moved = moved + 1
    if not earliest or due < earliest then earliest = due end
  end
end
if moved == 0 then
  return {0, 0}
end
-- Redis Cluster, the slot in migration: an index part not on this node (moved already, or not created yet) fails a
-- script at its first access and keeps what it wrote before (on the source), or reads as empty (on the target, sent
-- there by ASK). So every part is touched first, with KEYS[1], in one multi-key read: it fails there (TRYAGAIN or
-- "non local key") unless all are here, before anything is written; the mover retries next period.
local touched = {}
for part in pairs(parts) do touched[#touched + 1] = part end
many('EXISTS', KEYS[1], touched)
many('ZREM', KEYS[1], gone)
if #drop > 0 then many('HDEL', KEYS[2], drop) end
for part, fields in pairs(parts) do
  many('HSET', part, fields)
end
redis.call('HSET', KEYS[7], 'fan', tostring(fan), 'seq', id)
redis.call('HSET', KEYS[6], id, ARGV[2])
redis.call('ZADD', KEYS[5], string.format('%d', earliest), id)
return {moved, tonumber(id)}
