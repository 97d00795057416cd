-- delay-relay cold tier: cold-pick.lua (read only). Lists entries of shard i due further ahead than the business's
-- cold-after, for the relay to pack into cold blocks (cold-demote.lua moves them; docs/cold-tier.md).
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:inflight   KEYS[4] {K:i}:dead
-- ARGV:
--   ARGV[1] cold-after, ms: entries due after Redis TIME + this are listed
--   ARGV[2] at most this many entries
--   ARGV[3] positions of that range to skip (absent: 0): the relay lists in pages of a few hundred entries, so that
--           no call holds Redis for long, each page from where the previous one ended (an entry the range gained or
--           lost meanwhile may be listed twice or not at all: the relay drops the second listing, the next pass
--           lists a missed one; the listing is read only)
-- Returns {now ms, n, next offset (-1: the range ended), then per entry: member, due, payload (nil when none:
-- scheduled by message)}, earliest first. Entries whose member is also in flight or dead are left out: their
-- payload is shared with that delivery, so they stay hot.
-- Clock: exactly one call of Redis TIME.
-- Cost: one ZMSCORE (only while something is in flight or dead) and one HMGET per page, not one call per entry.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[2])
local from = '(' .. string.format('%d', now + tonumber(ARGV[1]))
local out = {string.format('%d', now), 0, -1}
-- one command for many members, in slices that stay within Lua's stack
local function many(command, key, args)
  local reply = {}
  for i = 1, #args, 1000 do
    local part = redis.call(command, key, unpack(args, i, math.min(#args, i + 999)))
    for _, v in ipairs(part) do reply[#reply + 1] = v end
  end
  return reply
end
-- nothing in flight and nothing dead (the usual case): no member to hold back, no lookup per entry
local held = redis.call('ZCARD', KEYS[3]) > 0 or redis.call('ZCARD', KEYS[4]) > 0
local n, offset = 0, tonumber(ARGV[3]) or 0
-- members held back (in flight or dead) are skipped; look at most 4 pages further for eligible ones
for _ = 1, 4 do
  local page = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', offset, limit)
  if #page == 0 then
    out[3] = -1
    break
  end
  local members = {}
  for k = 1, #page, 2 do members[#members + 1] = page[k] end
  local inflight, dead = {}, {}
  if held then
    inflight = many('ZMSCORE', KEYS[3], members)
    dead = many('ZMSCORE', KEYS[4], members)
  end
  local payloads = many('HMGET', KEYS[2], members)
  local used = 0
  for j = 1, #members do
    if n >= limit then break end
    used = j
    if not inflight[j] and not dead[j] then
      out[#out + 1] = members[j]
      out[#out + 1] = page[2 * j]
      -- false is a nil reply: no payload (an empty payload stays '')
      out[#out + 1] = payloads[j] or false
      n = n + 1
    end
  end
  if n >= limit then
    out[3] = offset + used
    break
  end
  if #page < 2 * limit then
    out[3] = -1
    break
  end
  offset = offset + limit
  out[3] = offset
end
out[2] = n
return out
