-- The fleet's division of a business's shards (DESIGN.md: "INCR K:cursor"). Every relay instance running the business
-- holds a seat, drawn with INCR K:cursor when it joins, and renews it well within the seat TTL. The live seats, in
-- INCR order, divide the shards: the instance of rank r among n live seats pops the shards s with s mod n = r. A seat
-- not renewed within its TTL (the instance died, froze, or lost Redis) is dropped by whoever renews next, and the
-- others take its shards over at their next renewal. Touches one Redis Cluster slot (K:cursor's).
-- KEYS[1] K:cursor (string: the INCR counter)   KEYS[2] {K:cursor}:seats (hash: holder -> "<seat>:<deadline ms>")
-- ARGV[1] holder (unique per relay instance)   ARGV[2] seat TTL in ms   ARGV[3] 'leave' to give the seat up
-- Returns {rank, live seats, seat, now, dropped, fleet} (rank 0-based; dropped = seats that expired or were unreadable
-- and were removed now; fleet = K:cursor after the call). 'leave' returns {0, 0, 0, now, 0, fleet before the leave}.
-- Every change of the live seats (a seat drawn, given up, or dropped) INCRs K:cursor, so an instance that finds it
-- moved since its previous renewal knows the seats changed, even when they changed and changed back in between: the
-- other instances may hold a view of any moment in between (ShardDivision pops every shard for a renewal period).
-- Clock: the script reads the time in exactly one call of Redis TIME.
-- A cursor that went back (K:cursor deleted while instances hold seats) may hand out a seat number twice: seats are
-- ranked by (seat, holder), so two equal numbers still give two ranks.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder = ARGV[1]
if ARGV[3] == 'leave' then
  local before = tonumber(redis.call('GET', KEYS[1]) or '0')
  if redis.call('HDEL', KEYS[2], holder) == 1 then
    redis.call('INCR', KEYS[1])
  end
  return {0, 0, 0, now, 0, before}
end
local ttl = tonumber(ARGV[2])
local all = redis.call('HGETALL', KEYS[2])
local live = {}
local mine = nil
local dropped = {}
for i = 1, #all, 2 do
  local seat, deadline = string.match(all[i + 1], '^(%d+):(%d+)$')
  seat = tonumber(seat)
  deadline = tonumber(deadline)
  if not seat or not deadline or deadline < now then
    if all[i] ~= holder then
      table.insert(dropped, all[i])
    end
  elseif all[i] == holder then
    mine = seat
  else
    table.insert(live, {seat, all[i]})
  end
end
if not mine then
  -- joins (or rejoins after its seat expired: it goes to the end of the order)
  mine = redis.call('INCR', KEYS[1])
end
redis.call('HSET', KEYS[2], holder, mine .. ':' .. (now + ttl))
if #dropped > 0 then
  redis.call('HDEL', KEYS[2], unpack(dropped))
  redis.call('INCR', KEYS[1])
end
table.insert(live, {mine, holder})
table.sort(live, function(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[2] < b[2]
end)
local rank = 0
for i = 1, #live do
  if live[i][2] == holder then rank = i - 1 end
end
return {rank, #live, mine, now, #dropped, tonumber(redis.call('GET', KEYS[1]) or '0')}
