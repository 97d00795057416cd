-- delay-relay producer contract v2 (v1's calls and replies, cold tier aware): reschedule.lua
-- Moves an entry that is scheduled (waiting in K:i) to a new due time, and wakes the relay when it became the
-- shard's earliest entry. Its payload (when scheduled by id) is kept. An entry not scheduled (never was, already
-- relayed, in flight, dead) is left alone.
-- Any client may load it (SCRIPT LOAD, then EVALSHA); the Java producer (relay-api) runs this very file.
--
-- KEYS: the same five keys of shard i as schedule.lua, in the same order:
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:attempts   KEYS[5] {K:i}:dead
-- ARGV:
--   ARGV[1] member: the message, or the id it was scheduled under
--   ARGV[2] 'at' (ARGV[3] is the due time, epoch ms) or 'after' (ARGV[3] is a delay added to Redis TIME)
--   ARGV[3] milliseconds (integer)
--   ARGV[4] wake channel K:wake
--   ARGV[5] shard index i, sent on the wake channel as "<i>:<due>"
-- Returns the new due time, epoch ms, or -1 when the member was not scheduled in this shard. A cold entry (moved by
-- the relay to a cold block, docs/cold-tier.md) is scheduled too: its new due time is written into the cold member
-- index (or a cold-moved request, for a member indexed by digest) and its block is brought back by then.
-- Refuses (error reply "EXPIRY delay-relay reschedule.lua: ...", nothing written) a due time after the entry's own
-- expiry (schedule.lua's ARGV[7]). Not for a cold entry: its payload, and so its expiry, is inside a compressed
-- block the script cannot read; it is moved as asked.
--
-- Like a new schedule it clears the attempts mark (new due time, new AMQP message id), unless the member is also
-- in flight (see schedule.lua).
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local member, mode, ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
if ms == nil or ms ~= math.floor(ms) then
  return redis.error_reply('ERR delay-relay reschedule.lua: ARGV[3] must be integer milliseconds, was ' .. tostring(ARGV[3]))
end
local due
if mode == 'after' then
  local t = redis.call('TIME')
  due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ms
elseif mode == 'at' then
  due = ms
else
  return redis.error_reply("ERR delay-relay reschedule.lua: ARGV[2] must be 'at' or 'after', was " .. tostring(mode))
end
-- Cold tier (docs/cold-tier.md): the relay may have moved a far-future entry out of K:i into a cold block of this
-- shard; it is then listed in the member index {K:i}:cold-ix:<n> (n from the member's SHA-1 and the fan-out in
-- {K:i}:cold-meta), keys built from KEYS[2]'s prefix, so the same slot. Without {K:i}:cold-meta nothing is cold.
-- The index field of a member is the member itself, or, when cold-meta's fan reads "2:<fan-out>" (index rule 2) and
-- the member is longer than 32 bytes (or starts with byte 0xFF), byte 0xFF and bytes 4-11 of its SHA-1 (a digest). A digest cannot tell which
-- member it stands for, so a change to such an entry is written as a request keyed by the whole member
-- ({K:i}:cold-drop: cancelled or scheduled again; {K:i}:cold-moved: rescheduled to a due time) that the relay applies
-- when it brings the block back, after checking the member against the block: nothing else is ever changed.
local function coldOf(m)
  local prefix = string.sub(KEYS[2], 1, -9)
  local recorded = redis.call('HMGET', prefix .. 'cold-meta', 'fan')[1]
  if not recorded then return nil end
  local rule, fan = string.match(recorded, '^(%d+):(%d+)$')
  local h = redis.sha1hex(m)
  local part = tonumber(string.sub(h, 1, 6), 16) % tonumber(fan or recorded)
  local c = {prefix = prefix, field = m, ix = prefix .. 'cold-ix:' .. part}
  if rule == '2' and (#m > 32 or string.byte(m, 1) == 255) then
    local b = {}
    for k = 7, 21, 2 do b[#b + 1] = tonumber(string.sub(h, k, k + 1), 16) end
    c.field, c.digest = '\255' .. string.char(unpack(b)), true
  end
  return c
end
-- The block a cold entry of member m lives in per the index, or nil (reads only: the index part, and for a digest
-- field the two request hashes, so that in a Redis Cluster slot in migration the script fails before any write).
local function coldBlockOf(c, m)
  local at = redis.call('HMGET', c.ix, c.field)[1]
  if c.digest then
    local dropped = redis.call('HMGET', c.prefix .. 'cold-drop', m)[1]
    local moved = redis.call('HMGET', c.prefix .. 'cold-moved', m)[1]
    if dropped then return nil end
    return at, moved
  end
  return at
end
if not redis.call('ZSCORE', KEYS[1], member) then
  local cold = coldOf(member)
  local at = cold and coldBlockOf(cold, member)
  if not at then
    return -1
  end
  -- the relay brings the entry back at this time ("<block>:<due>" in the index, or a cold-moved request); the block
  -- comes back no later than it needs
  local block = string.match(at, '^(%d+)')
  local coldDue = string.format('%d', due)
  -- Redis Cluster, the slot in migration: read the block zset before the first write (see cancel.lua)
  redis.call('ZSCORE', cold.prefix .. 'cold', block)
  if cold.digest then
    redis.call('HSET', cold.prefix .. 'cold-moved', member, coldDue)
  else
    redis.call('HSET', cold.ix, member, block .. ':' .. coldDue)
  end
  redis.call('ZADD', cold.prefix .. 'cold', 'XX', 'LT', coldDue, block)
  return due
end
-- reads first: a key of the wrong type fails the script before anything is written
local inFlight = redis.call('ZSCORE', KEYS[3], member)
redis.call('HMGET', KEYS[4], member)
local dueText = string.format('%d', due)
-- the entry's own expiry (contract v2 options, in its payload's envelope) counts for a delivery due at or before
-- it: a due time after it is refused, as schedule.lua refuses an expiry before the due time
local payload = redis.call('HMGET', KEYS[2], member)[1]
local expiry = payload and string.match(payload, '^\255DR2:(%d+):')
if expiry and due > tonumber(expiry) then
  return redis.error_reply('EXPIRY delay-relay reschedule.lua: the due time ' .. dueText
      .. " is after the entry's expiry " .. expiry)
end
redis.call('ZADD', KEYS[1], 'XX', dueText, member)
if not inFlight then
  redis.call('HDEL', KEYS[4], member)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == member then
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. ':' .. dueText)
end
return due
