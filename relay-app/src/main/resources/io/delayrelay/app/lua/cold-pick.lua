-- delay-relay cold tier: cold-pick.lua (read only). Lists entries of shard i due further ahead than the business's
-- cold-after, for the relay to pack into cold blocks (cold-demote.lua moves them; docs/cold-tier.md).
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:dead
-- ARGV:
--   ARGV[1] cold-after, ms: entries due after Redis TIME + this are listed
--   ARGV[2] at most this many entries
-- Returns {now ms, n, member, due, payload or '', has payload '1'/'0', ...}, earliest first. Entries whose member is
-- also in flight or dead are left out: their payload is shared with that delivery, so they stay hot.
-- Clock: exactly one call of Redis TIME.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[2])
local from = '(' .. string.format('%d', now + tonumber(ARGV[1]))
local out = {string.format('%d', now), 0}
local n, offset = 0, 0
-- members held back (in flight or dead) are skipped; look at most 4 pages further for eligible ones
for _ = 1, 4 do
  local page = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', offset, limit)
  if #page == 0 then break end
  for k = 1, #page, 2 do
    local member = page[k]
    if n < limit and not redis.call('ZSCORE', KEYS[3], member) and not redis.call('ZSCORE', KEYS[4], member) then
      local payload = redis.call('HMGET', KEYS[2], member)[1]
      out[#out + 1] = member
      out[#out + 1] = page[k + 1]
      out[#out + 1] = payload or ''
      out[#out + 1] = payload and '1' or '0'
      n = n + 1
    end
  end
  if n >= limit or #page < 2 * limit then break end
  offset = offset + limit
end
out[2] = n
return out
