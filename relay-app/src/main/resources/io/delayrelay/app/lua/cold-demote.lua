-- delay-relay cold tier: cold-demote.lua. Moves entries of shard i into one cold block, atomically: the block is
-- stored and every entry still exactly as cold-pick.lua listed it (same due time, same payload, not in flight, not
-- dead) leaves K:i and {K:i}:payloads and is indexed as living in this block. An entry that changed meanwhile stays
-- hot: its copy in the block is never promoted (the index does not point at the block). So a relay killed before
-- this script moved nothing, one killed after it moved everything; two relays demoting the same entries at once
-- leave one live copy (the second finds them gone from K:i). docs/cold-tier.md has the whole argument.
-- A block's entries may come in slices (calls of a bounded size, so that no call holds Redis for long): the first
-- slice that moves an entry stores the block; a later slice names the block and moves its own entries into it, or
-- nothing when the block is gone (promoted meanwhile). A relay killed between slices leaves the later slices' entries
-- hot (their copies in the block are not live): demoted again later, into another block.
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:dead
--   KEYS[5] {K:i}:cold        zset  block id -> earliest due time of its entries
--   KEYS[6] {K:i}:cold-blocks hash  block id -> block (compressed by the relay; opaque here)
--   KEYS[7] {K:i}:cold-meta   hash  fan = index fan-out, seq = last block id
--   The member index {K:i}:cold-ix:<n> (hash member -> block id[:due]) is built from KEYS[7]'s prefix: the same slot.
-- ARGV:
--   ARGV[1] index fan-out the relay computed the parts with (n = first 24 bits of SHA-1(member) mod fan, as the
--           contract scripts compute it); recorded by the first demotion. A different recorded one: nothing is done
--   ARGV[2] the block's bytes (a first slice), or '' (a later slice)
--   ARGV[3] '' (a first slice), or the id of the block a later slice adds to
--   ARGV[4] parts: 4 bytes per index part, in the order of the members: part n (2 bytes, big-endian), members (2)
--   ARGV[5] flags: one byte per entry, '1' it has a payload, '0' none (scheduled by message)
--   ARGV[6 .. 5+n] members, grouped by part as ARGV[4] says; ARGV[6+n .. 5+2n] their due ms (as cold-pick.lua
--   listed them); ARGV[6+2n .. 5+3n] their payloads ('' when none); n = #ARGV[5]
-- Returns {entries moved, block id (0 when none moved)}, or {-1, recorded fan} when ARGV[1] is not the recorded
-- fan-out (the relay computes the parts again).
-- Clock: none.
-- Cost: a few commands per slice (ZMSCORE, HMGET, ZREM, HDEL of all its members at once, one HSET per index part);
-- per entry only its three arguments and the comparisons (no hashing in Lua: the relay computed the parts).
local meta = redis.call('HMGET', KEYS[7], 'fan', 'seq')
if meta[1] and meta[1] ~= ARGV[1] then
  return {-1, tonumber(meta[1])}
end
local flags = ARGV[5]
local n = #flags
if n == 0 then
  return {0, 0}
end
local id = ARGV[3]
local first = id == ''
if first then
  id = tostring((tonumber(meta[2]) or 0) + 1)
elseif redis.call('HEXISTS', KEYS[6], id) == 0 then
  -- promoted (or gone) since the first slice: this slice's entries stay hot
  return {0, 0}
end
local m0, d0, p0 = 5, 5 + n, 5 + 2 * n
-- one command for ARGV[from..to], in slices that stay within Lua's stack
local function range(command, key, from, to)
  if to - from < 1000 then
    return redis.call(command, key, unpack(ARGV, from, to))
  end
  local reply = {}
  for i = from, to, 1000 do
    local part = redis.call(command, key, unpack(ARGV, i, math.min(to, i + 999)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do reply[#reply + 1] = v end
    end
  end
  return reply
end
-- one command for a table of arguments, in slices
local function many(command, key, args)
  for i = 1, #args, 1000 do
    redis.call(command, key, unpack(args, i, math.min(#args, i + 999)))
  end
end
local scores = range('ZMSCORE', KEYS[1], m0 + 1, m0 + n)
local inflight, dead = {}, {}
if redis.call('ZCARD', KEYS[3]) > 0 or redis.call('ZCARD', KEYS[4]) > 0 then
  inflight = range('ZMSCORE', KEYS[3], m0 + 1, m0 + n)
  dead = range('ZMSCORE', KEYS[4], m0 + 1, m0 + n)
end
local current = range('HMGET', KEYS[2], m0 + 1, m0 + n)
local ok, moved, withPayload, earliest = {}, 0, 0, nil
local byte, one = string.byte, 49 -- '1'
for j = 1, n do
  local score, due = scores[j], ARGV[d0 + j]
  -- the same text in the usual case (strings are interned: one pointer comparison)
  if score and (score == due or tonumber(score) == tonumber(due)) and not inflight[j] and not dead[j] then
    local has = byte(flags, j) == one
    local now = current[j]
    if (has and now == ARGV[p0 + j]) or (not has and not now) then
      ok[j] = true
      moved = moved + 1
      if has then withPayload = withPayload + 1 end
      local d = tonumber(due)
      if not earliest or d < earliest then earliest = d end
    end
  end
end
if moved == 0 then
  return {0, 0}
end
-- Redis Cluster, the slot in migration: an index part not on this node (moved already, or not created yet) fails a
-- script at its first access and keeps what it wrote before (on the source), or reads as empty (on the target, sent
-- there by ASK). So every part is touched first, with KEYS[1], in one multi-key read: it fails there (TRYAGAIN or
-- "non local key") unless all are here, before anything is written; the mover retries next period.
local prefix = string.sub(KEYS[7], 1, -10) .. 'cold-ix:'
local touched = {}
for q = 1, #ARGV[4], 4 do
  local a, b = byte(ARGV[4], q, q + 1)
  touched[#touched + 1] = prefix .. (a * 256 + b)
end
many('EXISTS', KEYS[1], touched)
if moved == n then
  range('ZREM', KEYS[1], m0 + 1, m0 + n)
  if withPayload == n then
    range('HDEL', KEYS[2], m0 + 1, m0 + n)
  elseif withPayload > 0 then
    local drop = {}
    for j = 1, n do
      if byte(flags, j) == one then drop[#drop + 1] = ARGV[m0 + j] end
    end
    many('HDEL', KEYS[2], drop)
  end
else
  local gone, drop = {}, {}
  for j = 1, n do
    if ok[j] then
      gone[#gone + 1] = ARGV[m0 + j]
      if byte(flags, j) == one then drop[#drop + 1] = ARGV[m0 + j] end
    end
  end
  many('ZREM', KEYS[1], gone)
  if #drop > 0 then many('HDEL', KEYS[2], drop) end
end
local parts, j = ARGV[4], 1
for q = 1, #parts, 4 do
  local a, b, c, d = byte(parts, q, q + 3)
  local last = j + c * 256 + d - 1
  local fields = {}
  for k = j, last do
    if ok[k] then
      fields[#fields + 1] = ARGV[m0 + k]
      fields[#fields + 1] = id
    end
  end
  if #fields > 0 then many('HSET', prefix .. (a * 256 + b), fields) end
  j = last + 1
end
local at = string.format('%d', earliest)
if first then
  redis.call('HSET', KEYS[7], 'fan', ARGV[1], 'seq', id)
  redis.call('HSET', KEYS[6], id, ARGV[2])
  redis.call('ZADD', KEYS[5], at, id)
else
  redis.call('ZADD', KEYS[5], 'LT', at, id)
end
return {moved, tonumber(id)}
