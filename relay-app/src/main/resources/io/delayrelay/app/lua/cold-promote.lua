-- delay-relay cold tier: cold-promote.lua. Brings one cold block of shard i back into K:i (and its payloads into
-- {K:i}:payloads), atomically, and deletes the block. Only entries the member index still points at this block are
-- live: one cancelled meanwhile (cancel.lua removed it from the index) or scheduled again (schedule.lua did, and the
-- new copy is hot) is skipped; one rescheduled (reschedule.lua wrote "<block>:<due>" into the index) comes back at
-- its new due time. A block already promoted (by another relay, or by this one before a kill) is not in
-- {K:i}:cold-blocks any more: nothing is done. docs/cold-tier.md has the argument.
-- A block's entries may come in slices (calls of a bounded size, so that no call holds Redis for long): each slice
-- brings its live entries back and unindexes them; the last one (ARGV[5] = '1') deletes the block. A relay killed
-- between slices leaves the block with the later slices' entries still live in it: the next promotion of the block
-- skips the entries already back (the index no longer points at the block) and brings the others.
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:cold   KEYS[4] {K:i}:cold-blocks   KEYS[5] {K:i}:cold-meta
--   The member index {K:i}:cold-ix:<n> and the requests {K:i}:cold-drop and {K:i}:cold-moved are built from
--   KEYS[5]'s prefix: the same slot.
-- Under index rule 2 (cold-demote.lua) a member over 32 bytes has a digest field: it is live when the digest
-- points at this block, and then its requests, keyed by the whole member, apply: a drop request skips it, a moved one
-- brings it back at that due time; both are deleted with the index field. The last slice of the shard's last block
-- clears the recorded fan-out and rule (cold-meta keeps seq) and any request left (a collision's): the next demotion starts the tier anew, under rule 2.
-- ARGV:
--   ARGV[1] block id   ARGV[2] wake channel K:wake   ARGV[3] shard index i
--   ARGV[4] index fan-out the relay computed the parts with (cold-due.lua returns the recorded one); a different
--           recorded one: nothing is done
--   ARGV[5] '1' when this slice is the block's last (the block is deleted after it), '0' otherwise
--   ARGV[6] parts: 4 bytes per index part, in the order of the members: part n (2 bytes, big-endian), members (2)
--   ARGV[7] flags: one byte per entry, '1' it has a payload, '0' none
--   ARGV[8 .. 7+n] members of the block (the relay decoded it), grouped by part as ARGV[6] says; ARGV[8+n .. 7+2n]
--   their due ms; ARGV[8+2n .. 7+3n] their payloads ('' when none); ARGV[8+3n .. 7+4n] their digest fields ('' for
--   a member indexed by itself; used under rule 2 only), absent when no member of the slice has one; n = #ARGV[7]
-- Returns {entries brought back, entries skipped}, {-1, 0} when the block was gone, or {-2, recorded fan} when
-- ARGV[4] is not the recorded fan-out (the relay computes the parts again).
-- Clock: none.
-- Cost: one HMGET and one HDEL per index part, and one ZMSCORE, ZADD and HSET for all the slice's entries; no
-- hashing in Lua (the relay computed the parts).
-- include: lib/hmget.lua
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[4], id) == 0 then
  redis.call('ZREM', KEYS[3], id)
  return {-1, 0}
end
-- fan: "2:<fan-out>" (index rule 2) or "<fan-out>" (rule 1)
local recorded = redis.call('HMGET', KEYS[5], 'fan')[1]
local rule, fan = string.match(recorded or '', '^(%d+):(%d+)$')
fan = fan or recorded
if fan ~= ARGV[4] then
  return {-2, tonumber(fan) or 0}
end
local rule2 = rule == '2'
local flags, parts = ARGV[7], ARGV[6]
local n = #flags
local m0, d0, p0, f0 = 7, 7 + n, 7 + 2 * n, 7 + 3 * n
-- whether any entry of the slice has a digest field to use
local digests = rule2 and #ARGV > f0
-- each entry's index field
local function field(k)
  local f = digests and ARGV[f0 + k] or ''
  return f ~= '' and f or ARGV[m0 + k]
end
local byte, one = string.byte, 49 -- '1'
local prefix = string.sub(KEYS[5], 1, -10) .. 'cold-ix:'
-- one command for a table of arguments, in slices that stay within Lua's stack
local function many(command, key, args)
  for i = 1, #args, 1000 do
    redis.call(command, key, unpack(args, i, math.min(#args, i + 999)))
  end
end
-- one command for ARGV[from..to], in slices
local function range(command, key, from, to)
  if to - from < 1000 then
    return redis.call(command, key, unpack(ARGV, from, to))
  end
  local reply = {}
  for i = from, to, 1000 do
    local part = redis.call(command, key, unpack(ARGV, i, math.min(to, i + 999)))
    for _, v in ipairs(part) do reply[#reply + 1] = v end
  end
  return reply
end
-- Redis Cluster, the slot in migration: an index part not on this node (moved already, or not created yet) fails a
-- script at its first access and keeps what it wrote before (on the source), or reads as empty (on the target, sent
-- there by ASK). So every part is touched first, with KEYS[1], in one multi-key read: it fails there (TRYAGAIN or
-- "non local key") unless all are here, before anything is written (a block promoted there unread
-- would be deleted with its entries); the mover retries next period.
local touched = {}
for q = 1, #parts, 4 do
  local a, b = byte(parts, q, q + 1)
  touched[#touched + 1] = prefix .. (a * 256 + b)
end
local dropKey, movedKey = string.sub(KEYS[5], 1, -10) .. 'cold-drop', string.sub(KEYS[5], 1, -10) .. 'cold-moved'
if digests then
  touched[#touched + 1] = dropKey
  touched[#touched + 1] = movedKey
end
many('EXISTS', KEYS[1], touched)
-- where the index points each member: its block id, or "<block id>:<due ms>" after a reschedule
local at, keyOf, lastOf = {}, {}, {}
local j = 1
for q = 1, #parts, 4 do
  local a, b, c, d = byte(parts, q, q + 3)
  local last = j + c * 256 + d - 1
  local key = prefix .. (a * 256 + b)
  local reply
  if digests then
    local fields = {}
    for k = j, last do fields[#fields + 1] = field(k) end
    reply = hmget(key, fields, false)
  else
    reply = range('HMGET', key, m0 + j, m0 + last)
  end
  for k = j, last do at[k] = reply[k - j + 1] end
  keyOf[#keyOf + 1] = key
  lastOf[#lastOf + 1] = last
  j = last + 1
end
local hot = n > 0 and range('ZMSCORE', KEYS[1], m0 + 1, m0 + n) or {}
-- the requests of the live entries indexed by digest (rule 2), keyed by the whole member
local asked, askedAt, dropped, movedTo = {}, {}, {}, {}
if digests and redis.call('EXISTS', dropKey, movedKey) > 0 then
  for k = 1, n do
    if at[k] and ARGV[f0 + k] ~= '' and string.match(at[k], '^(%d+)') == id then
      asked[#asked + 1] = ARGV[m0 + k]
      askedAt[#asked] = k
    end
  end
  local d, mv = hmget(dropKey, asked, false), hmget(movedKey, asked, false)
  for q = 1, #asked do
    dropped[askedAt[q]] = d[q]
    movedTo[askedAt[q]] = mv[q]
  end
end
local zadd, hset = {}, {}
local live, back, skipped, earliest, first = {}, 0, 0, nil, nil
for k = 1, n do
  local pointer, due = at[k], nil
  if pointer == id then
    -- the usual case (strings are interned: one pointer comparison)
    due = ARGV[d0 + k]
  elseif pointer then
    local blockOf, moved = string.match(pointer, '^(%d+):?(%d*)$')
    if blockOf == id then due = moved ~= '' and moved or ARGV[d0 + k] end
  end
  if due and dropped[k] then
    -- cancelled or scheduled again while cold (a drop request keyed by this very member)
    live[k] = true
    due = nil
  elseif due and movedTo[k] then
    due = movedTo[k]
  end
  if due then
    live[k] = true
    -- a hot copy is newer (the contract scripts keep one live copy; this is defence in depth)
    if not hot[k] then
      local member = ARGV[m0 + k]
      zadd[#zadd + 1] = due
      zadd[#zadd + 1] = member
      if byte(flags, k) == one then
        hset[#hset + 1] = member
        hset[#hset + 1] = ARGV[p0 + k]
      end
      back = back + 1
      local d = tonumber(due)
      if not earliest or d < earliest then earliest, first = d, member end
    else
      skipped = skipped + 1
    end
  else
    skipped = skipped + 1
  end
end
j = 1
for q, key in ipairs(keyOf) do
  local last, fields = lastOf[q], {}
  for k = j, last do
    if live[k] then fields[#fields + 1] = field(k) end
  end
  if #fields > 0 then many('HDEL', key, fields) end
  j = last + 1
end
if #asked > 0 then
  many('HDEL', dropKey, asked)
  many('HDEL', movedKey, asked)
end
if #zadd > 0 then many('ZADD', KEYS[1], zadd) end
if #hset > 0 then many('HSET', KEYS[2], hset) end
if ARGV[5] == '1' then
  redis.call('HDEL', KEYS[4], id)
  redis.call('ZREM', KEYS[3], id)
  if redis.call('HLEN', KEYS[4]) == 0 then
    -- the shard's last block: nothing of it is cold any more; the next demotion records a fan-out for the shard's
    -- size then, and rule 2. The block ids go on from seq.
    redis.call('HDEL', KEYS[5], 'fan')
    if rule2 then
      -- requests a collision left (normally none: each is deleted with its entry's index field); HDEL, as the
      -- relay's minimal ACL has no DEL
      local function names(kv)
        local fields = {}
        for i = 1, #kv, 2 do fields[#fields + 1] = kv[i] end
        return fields
      end
      many('HDEL', dropKey, names(redis.call('HGETALL', dropKey)))
      many('HDEL', movedKey, names(redis.call('HGETALL', movedKey)))
    end
  end
end
if first then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if head[1] == first then
    redis.call('PUBLISH', ARGV[2], ARGV[3] .. ':' .. string.format('%d', earliest))
  end
end
return {back, skipped}
