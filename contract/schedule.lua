-- delay-relay producer contract v1: schedule.lua
-- Schedules one entry in one shard, by message or by id, and wakes the relay when it became the shard's
-- earliest entry. Scheduling a member that is already scheduled replaces its due time (and payload).
-- Any client may load it (SCRIPT LOAD, then EVALSHA); the Java producer (relay-api) runs this very file.
--
-- KEYS (all of shard i of source key K, so one Redis Cluster slot; always pass all five, in this order):
--   KEYS[1] K:i              zset  scheduled entries, score = due epoch ms
--   KEYS[2] {K:i}:payloads   hash  id -> message, for entries scheduled by id
--   KEYS[3] {K:i}:inflight   zset  relay-owned, read only here
--   KEYS[4] {K:i}:attempts   hash  relay-owned: failed attempts and original due time of a member
--   KEYS[5] {K:i}:dead       zset  relay-owned, read only here
-- ARGV:
--   ARGV[1] member: the message itself, or the id when ARGV[6] is given
--   ARGV[2] 'at' (ARGV[3] is the due time, epoch ms) or 'after' (ARGV[3] is a delay added to Redis TIME)
--   ARGV[3] milliseconds (integer)
--   ARGV[4] wake channel K:wake
--   ARGV[5] shard index i, sent on the wake channel as "<i>:<due>"
--   ARGV[6] optional: the message to store under the id ARGV[1] (schedule by id)
-- Returns the due time, epoch ms.
--
-- A new schedule starts afresh: the member's attempts mark is removed, so the relay derives a new AMQP message
-- id from the new due time (a consumer deduplicating on it does not drop the new message). Except while the
-- member is in flight: then the mark belongs to that delivery (its retries keep their message id); the relay
-- does not pop the member again before that delivery settles and clears it, so both deliveries happen.
-- Payloads: one per id. A dead letter of the same id keeps pointing at it, so this never deletes a payload; it
-- replaces it with the new message.
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local member, mode, ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
if ms == nil or ms ~= math.floor(ms) then
  return redis.error_reply('ERR delay-relay schedule.lua: ARGV[3] must be integer milliseconds, was ' .. tostring(ARGV[3]))
end
local due
if mode == 'after' then
  local t = redis.call('TIME')
  due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ms
elseif mode == 'at' then
  due = ms
else
  return redis.error_reply("ERR delay-relay schedule.lua: ARGV[2] must be 'at' or 'after', was " .. tostring(mode))
end
-- Reads first: a key of the wrong type (written by another program) fails the script before anything is written
-- (Lua writes are not rolled back); the payload hash is checked by its HSET, the first write. (Only commands a
-- producer's ACL already allows: README "Redis: password, ACL user, TLS".)
local inFlight = redis.call('ZSCORE', KEYS[3], member)
redis.call('ZSCORE', KEYS[1], member)
redis.call('HMGET', KEYS[4], member)
local dueText = string.format('%d', due)
if ARGV[6] then
  redis.call('HSET', KEYS[2], member, ARGV[6])
end
redis.call('ZADD', KEYS[1], dueText, member)
if not inFlight then
  redis.call('HDEL', KEYS[4], member)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == member then
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. ':' .. dueText)
end
return due
