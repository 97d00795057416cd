-- Settles deliveries the broker confirmed: forgets each member's delivery, but only the one this caller leased
-- (its lease token is the one in {K:i}:attempts, see pop.lua). A late ack of a lease the reaper already took back,
-- or of a member leased again since, changes nothing. Touches one Redis Cluster slot.
-- KEYS[1] K:i  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts  KEYS[5] {K:i}:dead
-- ARGV[1] lease token
-- ARGV[2] '0' when none of the members had a payload when popped: then a payload hash that does not exist (the
--         common case of a business that never schedules by id) spares the payload bookkeeping (two ZMSCOREs and
--         an HDEL); '1' (or anything else) always does it
-- ARGV[3..] members
-- Each member is settled by lib/settle.lua's settle (lease token checked, payload invariant kept).
-- Returns how many members were settled (still leased with this token).
-- Several shards in one call (standalone Redis only: a cluster refuses keys of several slots): KEYS holds the five
-- keys above once per shard, and ARGV one section per shard: lease token, payload flag (as ARGV[2]), member count,
-- members. Each shard is settled as above, only its members leased under its section's token. Returns the total
-- settled; a shard whose keys hold the wrong type fails the call (the shards before it are settled, the caller acks
-- the shards one by one to find it: settling twice changes nothing).
-- include: lib/settle.lua

if #KEYS == 5 then
  local members = {}
  for i = 3, #ARGV do members[#members + 1] = ARGV[i] end
  return settle(1, ARGV[1], ARGV[2], members)
end
local total, at = 0, 1
for g = 1, #KEYS / 5 do
  local token, anyPayload, n = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  local members = {}
  for i = 1, n do members[i] = ARGV[at + 2 + i] end
  at = at + 3 + n
  local settled = settle(g, token, anyPayload, members)
  if type(settled) == 'table' then return settled end
  total = total + settled
end
return total
