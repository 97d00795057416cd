-- The first ARGV[1] bytes of payloads stored under members, for the console's previews: a listing of 1,000
-- entries whose payloads are megabytes each must not carry gigabytes into the relay's heap. Reads only. One slot.
-- KEYS[1] {K:i}:payloads   ARGV[1] bytes per preview   ARGV[2..] members
-- Returns one value per member: its payload's first ARGV[1] bytes, or false when it has none.
local n = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local p = redis.call('HGET', KEYS[1], ARGV[i])
  if p then
    out[i - 1] = string.sub(p, 1, n)
  else
    out[i - 1] = false
  end
end
return out
