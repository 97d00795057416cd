-- An operator's action on scheduled entries of one shard (one Redis Cluster slot), from the ops endpoint.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:dead  KEYS[5] {K:i}:attempts
-- ARGV[1] 'cancel': takes each member out of K:i; its payload goes only when the member is in neither
--                   inflight nor dead (payload invariant: never delete a payload something still refers to);
--                   its attempts mark goes with it (a later schedule starts afresh)
--         'now':    moves each member that is still scheduled to now (Redis time), so it is delivered next
-- ARGV[2] wake channel K:wake, ARGV[3] shard index: 'now' publishes "<shard>:<now>" so sleeping workers look
-- ARGV[4..] members
-- A cold entry (moved by the relay into a cold block, docs/cold-tier.md; listed in the member index
-- {K:i}:cold-ix:<n>, keys built from KEYS[2]'s prefix, so the same slot) is scheduled too: 'cancel' removes it from
-- the index (it never comes back); 'now' writes "<block>:<now>" into the index and lowers the block's score in
-- {K:i}:cold to now (as contract/reschedule.lua does), so the mover brings it back within one of its periods. For a
-- member indexed by digest, both are requests keyed by the member ({K:i}:cold-drop, {K:i}:cold-moved), as in the
-- contract scripts.
-- Returns how many members were acted on.
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local done = 0
local prefix = string.sub(KEYS[2], 1, -9)
-- include: lib/cold-index.lua
local cold = coldIndex(prefix)
for i = 4, #ARGV do
  local m = ARGV[i]
  if ARGV[1] == 'cancel' then
    if redis.call('ZREM', KEYS[1], m) == 1 then
      -- as contract/cancel.lua: a delivery in flight keeps its attempts mark (it holds the lease token) and its
      -- payload; a dead letter keeps its payload
      if not redis.call('ZSCORE', KEYS[3], m) then
        redis.call('HDEL', KEYS[5], m)
        if not redis.call('ZSCORE', KEYS[4], m) then
          redis.call('HDEL', KEYS[2], m)
        end
      end
      done = done + 1
    elseif cold then
      local at, c = cold.at(m)
      if at then
        if c.digest then
          redis.call('HSET', cold.drop, m, '1')
          redis.call('HDEL', cold.moved, m)
        else
          redis.call('HDEL', c.ix, m)
        end
        done = done + 1
      end
    end
  elseif redis.call('ZSCORE', KEYS[1], m) then
    redis.call('ZADD', KEYS[1], 'XX', now, m)
    done = done + 1
  elseif cold then
    local at, c = cold.at(m)
    local block = string.match(at or '', '^(%d+)')
    if block then
      if c.digest then
        redis.call('HSET', cold.moved, m, now)
      else
        redis.call('HSET', c.ix, m, block .. ':' .. now)
      end
      redis.call('ZADD', prefix .. 'cold', 'XX', 'LT', now, block)
      done = done + 1
    end
  end
end
if ARGV[1] == 'now' and done > 0 then
  redis.call('PUBLISH', ARGV[2], ARGV[3] .. ':' .. now)
end
return done
