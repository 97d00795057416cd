-- Fragment (-- include: lib/cold-index.lua): the cold member index of shard i, as the contract scripts read it
-- (docs/cold-tier.md). coldIndex(prefix) reads {K:i}:cold-meta's fan (prefix is "{K:i}:"): "<fan-out>" (index rule 1,
-- a tier started before rule 2) or "2:<fan-out>". It returns nil when nothing of the shard is cold, or an object whose
-- of(m) gives a member's place: c.ix (the index part), c.field (the member itself, or under rule 2 for a member over 32
-- bytes or starting with byte 0xFF: 0xFF and bytes 4-11 of its SHA-1) and c.digest (true for a digest field, whose
-- changes are requests keyed by the whole member in {K:i}:cold-drop and {K:i}:cold-moved).
local function coldIndex(prefix)
  local recorded = redis.call('HMGET', prefix .. 'cold-meta', 'fan')[1]
  if not recorded then return nil end
  local rule, fanText = string.match(recorded, '^(%d+):(%d+)$')
  local fan, rule2 = tonumber(fanText or recorded), rule == '2'
  local index = {fan = fan, prefix = prefix, drop = prefix .. 'cold-drop', moved = prefix .. 'cold-moved'}
  function index.of(m)
    local h = redis.sha1hex(m)
    local c = {field = m, ix = prefix .. 'cold-ix:' .. (tonumber(string.sub(h, 1, 6), 16) % fan)}
    if rule2 and (#m > 32 or string.byte(m, 1) == 255) then
      local b = {}
      for k = 7, 21, 2 do b[#b + 1] = tonumber(string.sub(h, k, k + 1), 16) end
      c.field, c.digest = '\255' .. string.char(unpack(b)), true
    end
    return c
  end
  -- where the index says m's cold copy is: "<block>" or "<block>:<due ms>" (rescheduled), or nil (not cold);
  -- reads only
  function index.at(m)
    local c = index.of(m)
    local at = redis.call('HMGET', c.ix, c.field)[1]
    if at and c.digest then
      if redis.call('HEXISTS', index.drop, m) == 1 then return nil, c end
      local moved = redis.call('HMGET', index.moved, m)[1]
      if moved then at = at .. ':' .. moved end
    end
    return at, c
  end
  return index
end
