-- Fragment (-- include: lib/hmget.lua): hmget(key, fields, absent) reads the fields of a Lua table from one hash with
-- as few HMGETs as Lua's stack allows (parts of 4,000 fields), and returns their values in order, `absent` for a
-- field the hash does not hold.
local function hmget(key, fields, absent)
  local values, n = {}, 0
  for i = 1, #fields, 4000 do
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 3999, #fields)))
    for _, v in ipairs(part) do
      n = n + 1
      values[n] = v or absent
    end
  end
  return values
end
