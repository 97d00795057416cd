-- delay-relay producer contract v2 (unchanged since v1): cancel.lua
-- Removes a scheduled entry (waiting in K:i) from one shard. An entry already popped (in flight) is being
-- delivered and is not touched; neither is a dead letter.
-- Any client may load it (SCRIPT LOAD, then EVALSHA); the Java producer (relay-api) runs this very file.
--
-- KEYS: the same five keys of shard i as schedule.lua, in the same order:
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:attempts   KEYS[5] {K:i}:dead
-- ARGV[1] member: the message, or the id it was scheduled under
-- Returns 1 when removed, 0 when it was not scheduled in this shard.
--
-- Invariant shared with the relay's scripts: {K:i}:payloads[id] is deleted only by a script that leaves the id in
-- none of K:i, {K:i}:inflight, {K:i}:dead. So the payload stays while a delivery of the id is in flight (a retry
-- still publishes the message) or a dead letter of it waits (a replay still publishes the message), and so does
-- the attempts mark of an in-flight delivery.
local member = ARGV[1]
-- reads first: a key of the wrong type fails the script before anything is written (the payload hash is not read:
-- that would fetch the message; a payload hash of the wrong type fails the last HDEL)
local inFlight = redis.call('ZSCORE', KEYS[3], member)
local dead = redis.call('ZSCORE', KEYS[5], member)
redis.call('HMGET', KEYS[4], member)
if redis.call('ZREM', KEYS[1], member) == 0 then
  return 0
end
if not inFlight then
  redis.call('HDEL', KEYS[4], member)
  if not dead then
    redis.call('HDEL', KEYS[2], member)
  end
end
return 1
