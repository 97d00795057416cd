-- delay-relay producer contract v2 (v1's calls and replies, cold tier aware): cancel.lua
-- Removes a scheduled entry (waiting in K:i) from one shard. An entry already popped (in flight) is being
-- delivered and is not touched; neither is a dead letter.
-- Any client may load it (SCRIPT LOAD, then EVALSHA); the Java producer (relay-api) runs this very file.
--
-- KEYS: the same five keys of shard i as schedule.lua, in the same order:
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:attempts   KEYS[5] {K:i}:dead
-- ARGV[1] member: the message, or the id it was scheduled under
-- Returns 1 when removed, 0 when it was not scheduled in this shard. A cold entry (moved by the relay to a cold
-- block, docs/cold-tier.md) is scheduled too: it is removed from the cold member index (or a drop request is written
-- for it) and never comes back. For a member indexed by digest, 1 may also answer a member never cold whose digest is
-- a cold entry's (odds about cold entries / 2^64): that entry is not touched.
--
-- Invariant shared with the relay's scripts: {K:i}:payloads[id] is deleted only by a script that leaves the id in
-- none of K:i, {K:i}:inflight, {K:i}:dead. So the payload stays while a delivery of the id is in flight (a retry
-- still publishes the message) or a dead letter of it waits (a replay still publishes the message), and so does
-- the attempts mark of an in-flight delivery.
local member = ARGV[1]
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
-- The cold copy of m is gone: out of the index, or (a digest field) a drop request for the relay.
local function coldDrop(c, m)
  if c.digest then
    redis.call('HSET', c.prefix .. 'cold-drop', m, '1')
    redis.call('HDEL', c.prefix .. 'cold-moved', m)
  else
    redis.call('HDEL', c.ix, m)
  end
end
-- reads first: a key of the wrong type fails the script before anything is written (the payload hash is not read:
-- that would fetch the message; a payload hash of the wrong type fails the last HDEL)
local inFlight = redis.call('ZSCORE', KEYS[3], member)
local dead = redis.call('ZSCORE', KEYS[5], member)
redis.call('HMGET', KEYS[4], member)
local cold = coldOf(member)
local coldAt = cold and coldBlockOf(cold, member)
if redis.call('ZREM', KEYS[1], member) == 0 then
  -- a cold entry's payload is in its block (the relay moved only entries not in flight and not dead)
  if not coldAt then return 0 end
  coldDrop(cold, member)
  return 1
end
if coldAt then
  coldDrop(cold, member)
end
if not inFlight then
  redis.call('HDEL', KEYS[4], member)
  if not dead then
    redis.call('HDEL', KEYS[2], member)
  end
end
return 1
