-- delay-relay producer contract v2 (v1's calls and replies, cold tier aware): cancel.lua
-- Removes a scheduled entry (waiting in K:i) from one shard. An entry already popped (in flight) is being
-- delivered and is not touched; neither is a dead letter.
-- Any client may load it (SCRIPT LOAD, then EVALSHA); the Java producer (relay-api) runs this very file.
--
-- KEYS: the same five keys of shard i as schedule.lua, in the same order:
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:attempts   KEYS[5] {K:i}:dead
-- ARGV[1] member: the message, or the id it was scheduled under
-- Returns 1 when removed, 0 when it was not scheduled in this shard. A cold entry (moved by the relay to a cold
-- block, docs/cold-tier.md) is scheduled too: it is removed from the cold member index and never comes back.
--
-- Invariant shared with the relay's scripts: {K:i}:payloads[id] is deleted only by a script that leaves the id in
-- none of K:i, {K:i}:inflight, {K:i}:dead. So the payload stays while a delivery of the id is in flight (a retry
-- still publishes the message) or a dead letter of it waits (a replay still publishes the message), and so does
-- the attempts mark of an in-flight delivery.
local member = ARGV[1]
-- Cold tier (docs/cold-tier.md): the relay may have moved a far-future entry out of K:i into a cold block of this
-- shard; it is then listed in the member index {K:i}:cold-ix:<n> (n from the member's SHA-1 and the fan-out in
-- {K:i}:cold-meta), keys built from KEYS[2]'s prefix, so the same slot. Without {K:i}:cold-meta nothing is cold.
local function coldIndexOf(m)
  local prefix = string.sub(KEYS[2], 1, -9)
  local fan = redis.call('HMGET', prefix .. 'cold-meta', 'fan')[1]
  if not fan then return nil, prefix end
  return prefix .. 'cold-ix:' .. (tonumber(string.sub(redis.sha1hex(m), 1, 6), 16) % tonumber(fan)), prefix
end
-- reads first: a key of the wrong type fails the script before anything is written (the payload hash is not read:
-- that would fetch the message; a payload hash of the wrong type fails the last HDEL)
local inFlight = redis.call('ZSCORE', KEYS[3], member)
local dead = redis.call('ZSCORE', KEYS[5], member)
redis.call('HMGET', KEYS[4], member)
local coldIx = coldIndexOf(member)
-- Redis Cluster, the slot in migration: an index part not on this node fails the script at its first access and keeps
-- what it wrote before; read it first, so such a call fails before any write (the caller retries).
if coldIx then redis.call('HMGET', coldIx, member) end
if redis.call('ZREM', KEYS[1], member) == 0 then
  -- a cold entry's payload is in its block (the relay moved only entries not in flight and not dead)
  return coldIx and redis.call('HDEL', coldIx, member) or 0
end
if coldIx then
  redis.call('HDEL', coldIx, member)
end
if not inFlight then
  redis.call('HDEL', KEYS[4], member)
  if not dead then
    redis.call('HDEL', KEYS[2], member)
  end
end
return 1
