-- Takes leased members back after a failed or expired delivery: they wait in {K:i}:inflight for their retry (score
-- = retry time, lease token cleared), or, after too many attempts, go to the dead set with a reason. Touches one
-- Redis Cluster slot.
-- A retry never goes back into K:i: a producer's new schedule of the same member (in K:i) is a delivery of its own,
-- so the failed delivery is retried at its retry time (pop.lua takes due retries from inflight) and the new
-- schedule fires at its own time; neither merges into the other.
-- KEYS[1] {K:i}:inflight  KEYS[2] {K:i}:attempts  KEYS[3] {K:i}:dead  KEYS[4] {K:i}:dead-reasons
-- {K:i}:attempts values are "<failed>:<original due>:<lease token>" (see pop.lua); the original due is kept.
-- ARGV[1] 'expired' (leases whose deadline passed, at most ARGV[6], whoever held them), 'members' (ARGV[8..]),
--         or 'release' (ARGV[8..] never reached the broker: retried after the first retry delay, no attempt
--         counted). 'members' and 'release' act only on members still leased with token ARGV[7].
-- ARGV[2] max attempts: a member whose failed attempts reach it is dead
-- ARGV[3] retry delay in ms for the first failure; doubles per failed attempt
-- ARGV[4] retry delay cap in ms
-- ARGV[5] reason
-- ARGV[6] limit for 'expired'
-- ARGV[7] lease token for 'members' and 'release'
-- A dead letter's reason reads "<ARGV[5]> (due: <original due, epoch ms>) (attempts: <failed>)"; the due part is
-- left out for a delivery record written without one.
-- The payload is never touched: a retry and a dead letter both still need it.
-- Returns {requeued, deadCount, dead1, dead2, ...}
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Before the first write, refuse keys of another type (written by another program): failing halfway would
-- lose members.
local expected = {'zset', 'hash', 'zset', 'hash'}
for i = 1, #KEYS do
  local actual = redis.call('TYPE', KEYS[i]).ok
  if actual ~= 'none' and actual ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' is a ' .. actual .. ', expected a ' .. expected[i])
  end
end
-- parses a delivery record: failed attempts, original due, lease token ('' while waiting for a retry; nil for a
-- mark written by a relay before lease tokens: "<failed>:<original due>" or "<failed>")
local function parse(r)
  if not r then return 0, '', nil end
  local f, o, token = string.match(r, '^(%d+):([^:]*):(.*)$')
  if f then return tonumber(f), o, token end
  f, o = string.match(r, '^(%d+):([^:]*)$')
  if f then return tonumber(f), o, nil end
  return tonumber(r) or 0, '', nil
end
local work = {}
if ARGV[1] == 'expired' then
  -- due entries of inflight are expired leases and due retries; only the leases are taken back (a due retry is
  -- pop.lua's). Pages past retries so they cannot hide an expired lease.
  local limit = tonumber(ARGV[6])
  local offset = 0
  while #work < limit and offset < 8 * limit do
    local page = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', offset, limit)
    if #page == 0 then break end
    local records = redis.call('HMGET', KEYS[2], unpack(page))
    for i, m in ipairs(page) do
      local f, o, token = parse(records[i])
      if token ~= '' and #work < limit then
        work[#work + 1] = {m, f, o}
      end
    end
    if #page < limit then break end
    offset = offset + #page
  end
else
  local members = {}
  for i = 8, #ARGV do members[#members + 1] = ARGV[i] end
  if #members == 0 then return {0, 0} end
  local records = redis.call('HMGET', KEYS[2], unpack(members))
  local leased = redis.call('ZMSCORE', KEYS[1], unpack(members))
  for i, m in ipairs(members) do
    local f, o, token = parse(records[i])
    if leased[i] and token == ARGV[7] then
      work[#work + 1] = {m, f, o}
    end
  end
end
local maxAttempts = tonumber(ARGV[2])
local base = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local release = ARGV[1] == 'release'
local requeued, dead = 0, {}
for _, w in ipairs(work) do
  local m, failed, origin = w[1], w[2], w[3]
  if not release then
    failed = failed + 1
  end
  if not release and failed >= maxAttempts then
    redis.call('ZREM', KEYS[1], m)
    redis.call('HDEL', KEYS[2], m)
    redis.call('ZADD', KEYS[3], string.format('%d', now), m)
    -- the reason keeps the original due time (epoch ms), which the delivery record held until now
    local due = ''
    if origin ~= '' then due = ' (due: ' .. origin .. ')' end
    redis.call('HSET', KEYS[4], m, ARGV[5] .. due .. ' (attempts: ' .. failed .. ')')
    dead[#dead + 1] = m
  else
    local delay = base
    if not release then
      delay = math.min(base * math.pow(2, failed - 1), cap)
    end
    redis.call('ZADD', KEYS[1], string.format('%d', now + delay), m)
    redis.call('HSET', KEYS[2], m, failed .. ':' .. origin .. ':')
    requeued = requeued + 1
  end
end
return {requeued, #dead, unpack(dead)}
