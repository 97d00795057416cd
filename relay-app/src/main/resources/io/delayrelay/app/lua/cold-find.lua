-- delay-relay cold tier: cold-find.lua (read only). Looks members up in shard i's cold member index, for the ops
-- endpoint's search and listing of cold entries (docs/cold-tier.md: a cold entry is live only while the index points
-- at its block).
-- KEYS[1] {K:i}:cold-meta (the index {K:i}:cold-ix:<n>, n < fan, is built from its prefix: the same slot)
-- ARGV[1] 'members': ARGV[2..] members; returns their index values in the same order ('' when not cold), or {}
--                    when nothing of the shard is cold
--         'prefix':  ARGV[2] prefix, ARGV[3] first index part to read, ARGV[4] index fields to read at most (whole
--                    parts: a part is read at once); when ARGV[3] is 0 the member equal to the prefix is looked up
--                    first (an exact id is found whatever the bound). Returns {next part (-1: no more), fields read,
--                    member, index value, ...} for the members that start with the prefix.
-- An index value is "<block id>" or "<block id>:<due ms>" (rescheduled while cold).
-- Clock: none.
local prefix = string.sub(KEYS[1], 1, -10)
local fan = tonumber(redis.call('HMGET', KEYS[1], 'fan')[1])
local function part(m)
  return prefix .. 'cold-ix:' .. (tonumber(string.sub(redis.sha1hex(m), 1, 6), 16) % fan)
end
if ARGV[1] == 'members' then
  if not fan then
    return {}
  end
  local out = {}
  for i = 2, #ARGV do
    out[#out + 1] = redis.call('HMGET', part(ARGV[i]), ARGV[i])[1] or ''
  end
  return out
end
if not fan then
  return {-1, 0}
end
local want, from, most = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {-1, 0}
if from == 0 and want ~= '' then
  local exact = redis.call('HMGET', part(want), want)[1]
  if exact then
    out[#out + 1] = want
    out[#out + 1] = exact
  end
end
local read = 0
local s = from
while s < fan and read < most do
  local fields = redis.call('HGETALL', prefix .. 'cold-ix:' .. s)
  read = read + #fields / 2
  for k = 1, #fields, 2 do
    local m = fields[k]
    if m ~= want and string.sub(m, 1, #want) == want then
      out[#out + 1] = m
      out[#out + 1] = fields[k + 1]
    end
  end
  s = s + 1
end
out[1] = s < fan and s or -1
out[2] = read
return out
