-- delay-relay cold tier: cold-find.lua (read only). Looks members up in shard i's cold member index, for the ops
-- endpoint's search and listing of cold entries (docs/cold-tier.md: a cold entry is live only while the index points
-- at its block).
-- KEYS[1] {K:i}:cold-meta (the index {K:i}:cold-ix:<n>, n < fan, and the requests {K:i}:cold-drop and
--         {K:i}:cold-moved are built from its prefix: the same slot)
-- ARGV[1] 'members': ARGV[2..] members; returns where the index says each one's cold copy is, in the same order
--                    ('' when not cold), or {} when nothing of the shard is cold
--         'prefix':  ARGV[2] prefix, ARGV[3] first index part to read, ARGV[4] index fields to read at most (whole
--                    parts: a part is read at once); when ARGV[3] is 0 the member equal to the prefix is looked up
--                    first (an exact id is found whatever the bound). Returns {next part (-1: no more), fields read,
--                    fields skipped, member, index value, ...} for the members that start with the prefix. Skipped:
--                    digest fields (members over 32 bytes under index rule 2), which cannot be matched to a prefix.
-- An index value is "<block id>" or "<block id>:<due ms>" (rescheduled while cold); for a member indexed by digest
-- its requests are applied (a drop request: not cold; a moved one: its due time).
-- Clock: none.
-- include: lib/cold-index.lua
local prefix = string.sub(KEYS[1], 1, -10)
local cold = coldIndex(prefix)
if ARGV[1] == 'members' then
  if not cold then
    return {}
  end
  local out = {}
  for i = 2, #ARGV do
    out[#out + 1] = cold.at(ARGV[i]) or ''
  end
  return out
end
if not cold then
  return {-1, 0, 0}
end
local fan = cold.fan
local want, from, most = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {-1, 0, 0}
if from == 0 and want ~= '' then
  local exact = cold.at(want)
  if exact then
    out[#out + 1] = want
    out[#out + 1] = exact
  end
end
local read, skipped = 0, 0
local s = from
while s < fan and read < most do
  local fields = redis.call('HGETALL', prefix .. 'cold-ix:' .. s)
  read = read + #fields / 2
  for k = 1, #fields, 2 do
    local m = fields[k]
    if string.byte(m, 1) == 255 then
      skipped = skipped + 1
    elseif m ~= want and string.sub(m, 1, #want) == want then
      out[#out + 1] = m
      out[#out + 1] = fields[k + 1]
    end
  end
  s = s + 1
end
out[1] = s < fan and s or -1
out[2] = read
out[3] = skipped
return out
