-- The first ARGV[1] bytes of payloads stored under members, for the console's previews: a listing of 1,000
-- entries whose payloads are megabytes each must not carry gigabytes into the relay's heap. A compressed intake
-- message (starts with byte 0xFF, "DZ") is read whole up to ARGV[2] bytes: a cut one cannot be expanded. Reads only.
-- One slot.
-- KEYS[1] {K:i}:payloads   ARGV[1] bytes per preview   ARGV[2] bytes of a compressed intake message   ARGV[3..] members
-- Returns one value per member: its payload's first bytes, or false when it has none.
local n, whole = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV do
  local p = redis.call('HGET', KEYS[1], ARGV[i])
  if p then
    if string.sub(p, 1, 3) == '\255DZ' then
      out[i - 2] = string.sub(p, 1, whole)
    else
      out[i - 2] = string.sub(p, 1, n)
    end
  else
    out[i - 2] = false
  end
end
return out
