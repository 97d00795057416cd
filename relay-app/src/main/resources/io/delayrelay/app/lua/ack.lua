-- Forgets entries the broker confirmed. Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts
-- ARGV members
-- A payload is kept when its member was scheduled again meanwhile (it is back in K:i).
-- Returns how many members were still in flight.
local acked = redis.call('ZREM', KEYS[3], unpack(ARGV))
redis.call('HDEL', KEYS[4], unpack(ARGV))
local again = redis.call('ZMSCORE', KEYS[1], unpack(ARGV))
local drop = {}
for i, m in ipairs(ARGV) do
  if not again[i] then
    drop[#drop + 1] = m
  end
end
if #drop > 0 then
  redis.call('HDEL', KEYS[2], unpack(drop))
end
return acked
