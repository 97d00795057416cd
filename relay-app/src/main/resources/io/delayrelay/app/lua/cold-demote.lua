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
--   KEYS[7] {K:i}:cold-meta   hash  fan = "2:<fan-out>" (index rule 2, below) or "<fan-out>" (rule 1, a tier
--                                   started before rule 2), seq = last block id
--   The member index {K:i}:cold-ix:<n> (hash field -> block id[:due]) and the requests {K:i}:cold-drop and
--   {K:i}:cold-moved (member -> '1' / due ms) are built from KEYS[7]'s prefix: the same slot.
-- The index rule: a member's field is the member itself; under rule 2 (recorded by the first demotion of a shard
-- whose cold tier is empty) a member over 32 bytes or starting with byte 0xFF has a digest field instead (0xFF and
-- bytes 4-11 of its SHA-1, computed by the relay: ARGV's fields). A digest field already in the index (another cold
-- entry's, or another of this slice's) keeps the entry hot: a digest stands for one cold member at a time. Rule 2 is
-- recorded inside fan so that a relay or producer script that predates it fails on the shard (fan is not a number to
-- it) instead of reading the index by the wrong rule.
-- ARGV:
--   ARGV[1] index fan-out the relay computed the parts with (n = first 24 bits of SHA-1(member) mod fan, as the
--           contract scripts compute it); recorded by the first demotion. A different recorded one: nothing is done
--   ARGV[2] the block's bytes (a first slice), or '' (a later slice)
--   ARGV[3] '' (a first slice), or the id of the block a later slice adds to
--   ARGV[4] parts: 4 bytes per index part, in the order of the members: part n (2 bytes, big-endian), members (2)
--   ARGV[5] flags: one byte per entry, '1' it has a payload, '0' none (scheduled by message)
--   ARGV[6 .. 5+n] members, grouped by part as ARGV[4] says; ARGV[6+n .. 5+2n] their due ms (as cold-pick.lua
--   listed them); ARGV[6+2n .. 5+3n] their payloads ('' when none); ARGV[6+3n .. 5+4n] their digest fields ('' for
--   a member of 32 bytes or less not starting with 0xFF; used under rule 2 only), absent when no member of the slice
--   has one (the common case of ids: the script then does what it did before rule 2); n = #ARGV[5]
-- Returns {entries moved, block id (0 when none moved)}, or {-1, recorded fan} when ARGV[1] is not the recorded
-- fan-out (the relay computes the parts again).
-- Clock: none.
-- Cost: a few commands per slice (ZMSCORE, HMGET, ZREM, HDEL of all its members at once, one HSET per index part);
-- per entry only its three arguments and the comparisons (no hashing in Lua: the relay computed the parts).
-- include: lib/hmget.lua
local meta = redis.call('HMGET', KEYS[7], 'fan', 'seq')
local rule, fan = string.match(meta[1] or '', '^(%d+):(%d+)$')
fan = fan or meta[1]
if fan and fan ~= ARGV[1] then
  return {-1, tonumber(fan)}
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
local m0, d0, p0, f0 = 5, 5 + n, 5 + 2 * n, 5 + 3 * n
-- the index rule of this shard: 2 when recorded, or for a tier that starts now
local rule2 = rule == '2' or not meta[1]
-- whether any entry of the slice has a digest field to use
local digests = rule2 and #ARGV > f0
-- each entry's index field
local function field(j)
  local f = digests and ARGV[f0 + j] or ''
  return f ~= '' and f or ARGV[m0 + j]
end
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
local ok, candidates = {}, 0
local byte, one = string.byte, 49 -- '1'
for j = 1, n do
  local score, due = scores[j], ARGV[d0 + j]
  -- the same text in the usual case (strings are interned: one pointer comparison)
  if score and (score == due or tonumber(score) == tonumber(due)) and not inflight[j] and not dead[j] then
    local has = byte(flags, j) == one
    local now = current[j]
    if (has and now == ARGV[p0 + j]) or (not has and not now) then
      ok[j] = true
      candidates = candidates + 1
    end
  end
end
if candidates == 0 then
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
local requests = false
if digests then
  touched[#touched + 1] = string.sub(KEYS[7], 1, -10) .. 'cold-drop'
  touched[#touched + 1] = string.sub(KEYS[7], 1, -10) .. 'cold-moved'
end
many('EXISTS', KEYS[1], touched)
if digests then
  requests = redis.call('EXISTS', touched[#touched - 1], touched[#touched]) > 0
  -- a digest field stands for one cold member: one already in the index, or twice in this slice, keeps the entry hot
  local seen, j = {}, 1
  for q = 1, #ARGV[4], 4 do
    local a, b, c, d = byte(ARGV[4], q, q + 3)
    local last = j + c * 256 + d - 1
    local ask, at = {}, {}
    for k = j, last do
      if ok[k] and ARGV[f0 + k] ~= '' then
        local f = ARGV[f0 + k]
        if seen[f] then
          ok[k] = nil
        else
          seen[f] = true
          ask[#ask + 1] = f
          at[#ask] = k
        end
      end
    end
    if #ask > 0 then
      local held = hmget(prefix .. (a * 256 + b), ask, false)
      for i = 1, #ask do
        if held[i] then ok[at[i]] = nil end
      end
    end
    j = last + 1
  end
end
local moved, withPayload, earliest = 0, 0, nil
for j = 1, n do
  if ok[j] then
    moved = moved + 1
    if byte(flags, j) == one then withPayload = withPayload + 1 end
    local d = tonumber(ARGV[d0 + j])
    if not earliest or d < earliest then earliest = d end
  end
end
if moved == 0 then
  return {0, 0}
end
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
      fields[#fields + 1] = field(k)
      fields[#fields + 1] = id
    end
  end
  if #fields > 0 then many('HSET', prefix .. (a * 256 + b), fields) end
  j = last + 1
end
-- requests left for a member now demoted are stale (they were for a copy no longer indexed): the demoted entry is
-- the member's one live copy
if requests then
  local gone = {}
  for k = 1, n do
    if ok[k] and ARGV[f0 + k] ~= '' then gone[#gone + 1] = ARGV[m0 + k] end
  end
  if #gone > 0 then
    many('HDEL', touched[#touched - 1], gone)
    many('HDEL', touched[#touched], gone)
  end
end
local at = string.format('%d', earliest)
if first then
  redis.call('HSET', KEYS[7], 'fan', meta[1] or ('2:' .. ARGV[1]), 'seq', id)
  redis.call('HSET', KEYS[6], id, ARGV[2])
  redis.call('ZADD', KEYS[5], at, id)
else
  redis.call('ZADD', KEYS[5], 'LT', at, id)
end
return {moved, tonumber(id)}
