-- Leases up to ARGV[1] due entries of one shard to the caller: due retries first, then due schedules. Touches one
-- Redis Cluster slot. Never parses the message. Time is Redis TIME, never the caller's clock.
-- KEYS[1] K:i (zset)  KEYS[2] {K:i}:payloads  KEYS[3] {K:i}:inflight  KEYS[4] {K:i}:attempts
-- KEYS[5] {K:i}:dead  KEYS[6] {K:i}:dead-reasons (written only when the late policy takes an entry)
-- ARGV[1] batch size   ARGV[2] lease in ms   ARGV[3] lease token (unique per pop; ack and requeue must present it)
-- ARGV[4] ms after which a due schedule held back by its member's leased delivery is looked at again (one held back
--         by a delivery waiting for its retry is looked at again at that retry time)
-- ARGV[5] byte budget of the reply (members plus payloads; optional): the batch ends before the entry that would
--         exceed it, one entry is always taken; entries left out stay where they are, due, for the next pop
-- ARGV[6] '1' when the caller knows the shard has due entries (its last pop of it came back full): the emptiness
--         probe (EXISTS and two ZRANGEs before TIME) is skipped (optional; anything else probes)
-- ARGV[7] max lateness in ms (optional; empty or negative: none): an entry this pop would hand out more than that
--         after its original due time (kept across retries) is late
-- ARGV[8] what happens to a late entry: 'drop' (removed, its payload too unless a schedule or dead letter of the id
--         still needs it) or anything else: 'dead' (to {K:i}:dead, reason "expired: ...", replayable)
-- Late policy. An entry is also late past its per-message expiry: a payload written by contract v2's schedule.lua
--   with options starts "\255DR2:<expiry epoch ms>:" (docs/redis-contract.md); the expiry counts for a delivery
--   whose original due time is at or before it, so a replayed dead letter (a new delivery due at the replay time)
--   is published, and max-lateness counts from the replay time. Late entries are taken from the batch's candidates
--   (they count towards the batch size, not the byte budget) and never handed out; a pop that took any reports
--   nextDue = now (more may be due).
-- Returns {now, n, nextDue, expired, late, member1, due1, payload1, failed1, member2, ..., lateMember1, lateDue1,
--   lateExpiry1, ...}: the n entries handed out, then the late ones (lateExpiryX = the per-message expiry that made
--   it late, or '' when max-lateness did)
--   n = 0: nothing due; nextDue = the earliest score in K:i or inflight, or -1 when both are empty (then now = 0:
--          an empty shard, the common idle case, costs one EXISTS and no TIME).
--   n > 0: nextDue = the earliest score left (-1 when empty), or now when the batch came back full (count or byte
--          budget): more is due, the caller comes back at once, so the two ZRANGEs that would say so are skipped.
--          dueX is the entry's original due time (kept across retries, so the AMQP message id is too), payloadX is
--          nil when the member has no payload, failedX counts earlier failed deliveries.
--   expired = how many leases of this shard this pop saw expired (deadline passed, still held by a token; at most
--          2 x batch are looked at): the caller takes them back at once with requeue.lua 'expired' (that counts the
--          failed attempt). No periodic reaper round looks for them: every shard is popped at least once per
--          safety sweep or max-idle, and a pop's nextDue includes the earliest lease deadline.
-- Ownership. A member has at most one unsettled delivery, held in {K:i}:inflight: leased (score = lease deadline)
-- or waiting for its retry (score = retry time). {K:i}:attempts[member] describes it:
-- "<failed>:<original due>:<lease token>", the token empty while it waits for its retry. Only the holder of the
-- token may ack, retry or release it; requeue.lua 'expired' takes back leases whose deadline passed. A schedule in K:i of a
-- member with an unsettled delivery stays in K:i until that delivery settles: the delivery in flight and the new
-- schedule both happen, one after the other. (Relays before lease tokens wrote "<failed>:<original due>" for
-- members they put back into K:i; such a mark is still honoured once.)
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
-- model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
local known = ARGV[6] == '1'
local first, firstFlight = {}, {}
if not known then
  -- an empty shard (the idle case, and most of a sweep) costs one EXISTS
  if redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
    return {0, 0, -1, 0, 0}
  end
  first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  firstFlight = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if not first[2] and not firstFlight[2] then
    return {0, 0, -1, 0, 0}
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not known then
  local earliest = math.huge
  if first[2] then earliest = tonumber(first[2]) end
  if firstFlight[2] then earliest = math.min(earliest, tonumber(firstFlight[2])) end
  if earliest > now then
    return {now, 0, earliest, 0, 0}
  end
end
local batch = tonumber(ARGV[1])
local recheck = now + tonumber(ARGV[4])
-- taken[i] = {member, original due, failed, from K:i}; every read happens before the first write, so a key of the
-- wrong type (written by another program) fails the script before anything moved.
local taken = {}
local flightBlocked = false
local expired = 0
if known or (firstFlight[2] and tonumber(firstFlight[2]) <= now) then
  -- due retries; expired leases among them are reported, and taken back by requeue.lua (it counts the failed
  -- attempt first)
  local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 2 * batch)
  if #due > 0 then
    local names = {}
    for i = 1, #due / 2 do names[i] = due[2 * i - 1] end
    local records = redis.call('HMGET', KEYS[4], unpack(names))
    for i, m in ipairs(names) do
      local f, o, token = string.match(records[i] or '', '^(%d+):([^:]*):(.*)$')
      if f and token == '' then
        if #taken < batch then
          if o == '' then o = due[2 * i] end
          taken[#taken + 1] = {m, o, f, false}
        else
          flightBlocked = true
        end
      else
        -- a lease whose deadline passed (or a record of a relay before lease tokens): requeue.lua's
        expired = expired + 1
        flightBlocked = true
      end
    end
  end
end
-- Due schedules, a page of batch-size at a time. A schedule whose member has an unsettled delivery is held back
-- ("blocked"): every such member is in inflight, so paging past ZCARD(inflight) entries always reaches the others
-- (a shard whose first pages are all blocked still delivers the rest at once).
local blocked = false
-- when the earliest blocking delivery can move: its retry time while it waits for a retry, else ARGV[4] ms
local blockedUntil = math.huge
local seenAll = false
local offset, pages = 0, 0
local maxPages = 4 + math.ceil(redis.call('ZCARD', KEYS[3]) / batch)
while #taken < batch and pages < maxPages do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', offset, batch)
  local n = #due / 2
  if n == 0 then
    seenAll = true
    break
  end
  local names = {}
  for i = 1, n do names[i] = due[2 * i - 1] end
  local inFlight = redis.call('ZMSCORE', KEYS[3], unpack(names))
  local legacy = redis.call('HMGET', KEYS[4], unpack(names))
  for i, m in ipairs(names) do
    if #taken >= batch then break end
    if inFlight[i] then
      blocked = true
      local at = tonumber(inFlight[i])
      local f, _, token = string.match(legacy[i] or '', '^(%d+):([^:]*):(.*)$')
      if not (f and token == '' and at > now) then at = recheck end
      if at < blockedUntil then blockedUntil = at end
    else
      -- a mark left by a relay before lease tokens keeps that retry's count and due time
      local failed, origin = '0', due[2 * i]
      local mark = legacy[i]
      if mark then
        local f, o = string.match(mark, '^(%d+):([^:]*)$')
        if f then
          failed = f
          if o ~= '' then origin = o end
        elseif string.match(mark, '^%d+$') then
          failed = mark
        end
      end
      taken[#taken + 1] = {m, origin, failed, true}
    end
  end
  if n < batch then
    seenAll = true
    break
  end
  offset = offset + n
  pages = pages + 1
end
local out = {now, #taken, -1, expired, 0}
local trimmed = false
local candidates = #taken
local late = {}
local members, payloads = {}, {}
if #taken > 0 then
  for i, e in ipairs(taken) do members[i] = e[1] end
  payloads = redis.call('HMGET', KEYS[2], unpack(members))
  -- the late policy: max-lateness from the original due time, or the message's own expiry (contract v2 options)
  local maxLate = tonumber(ARGV[7] or '')
  if maxLate and maxLate < 0 then maxLate = nil end
  local keep, keepMembers, keepPayloads = {}, {}, {}
  for i, e in ipairs(taken) do
    local origin = tonumber(e[2])
    local isLate, expiry = false, ''
    if maxLate and origin and now > origin + maxLate then isLate = true end
    if not isLate and payloads[i] then
      local at = string.match(payloads[i], '^\255DR2:(%d+):')
      if at and origin and origin <= tonumber(at) and now > tonumber(at) then
        isLate, expiry = true, at
      end
    end
    if isLate then
      late[#late + 1] = {e[1], e[2], e[3], e[4], expiry}
    else
      keep[#keep + 1] = e
      keepMembers[#keep] = e[1]
      keepPayloads[#keep] = payloads[i]
    end
  end
  if #late > 0 then
    taken, members, payloads = keep, keepMembers, keepPayloads
    out[2] = #taken
    out[5] = #late
    local drop = ARGV[8] == 'drop'
    -- reads before the first write: the dead keys' types, and what the payload invariant needs for a drop
    local expected = {[5] = 'zset', [6] = 'hash'}
    for k, want in pairs(expected) do
      local actual = redis.call('TYPE', KEYS[k]).ok
      if actual ~= 'none' and actual ~= want then
        return redis.error_reply('WRONGTYPE ' .. KEYS[k] .. ' is a ' .. actual .. ', expected a ' .. want)
      end
    end
    local forget = {}
    if drop then
      for i, l in ipairs(late) do
        local stillNeeded = redis.call('ZSCORE', KEYS[5], l[1])
        if not stillNeeded and not l[4] then stillNeeded = redis.call('ZSCORE', KEYS[1], l[1]) end
        if not stillNeeded then forget[#forget + 1] = l[1] end
      end
    end
    local nowText = string.format('%d', now)
    for _, l in ipairs(late) do
      local m = l[1]
      if l[4] then redis.call('ZREM', KEYS[1], m) else redis.call('ZREM', KEYS[3], m) end
      redis.call('HDEL', KEYS[4], m)
      if not drop then
        local why
        if l[5] ~= '' then
          why = 'expired: past its expiry ' .. l[5]
        else
          why = 'expired: ' .. string.format('%d', now - tonumber(l[2])) .. ' ms late, max-lateness '
              .. string.format('%d', maxLate) .. ' ms'
        end
        redis.call('ZADD', KEYS[5], nowText, m)
        redis.call('HSET', KEYS[6], m, why .. ' (due: ' .. l[2] .. ') (attempts: ' .. l[3] .. ')')
      end
    end
    if #forget > 0 then
      redis.call('HDEL', KEYS[2], unpack(forget))
    end
  end
end
if #taken > 0 then
  -- byte budget (of the entries handed out): cut before anything of them is written, so the entries left out are
  -- untouched
  local budget = tonumber(ARGV[5] or '0') or 0
  if budget > 0 then
    local bytes = 0
    for i = 1, #taken do
      bytes = bytes + #members[i] + #(payloads[i] or '')
      if bytes > budget and i > 1 then
        for j = #taken, i, -1 do
          taken[j], members[j], payloads[j] = nil, nil, nil
        end
        trimmed = true
        break
      end
    end
    out[2] = #taken
  end
  local deadline = string.format('%d', now + tonumber(ARGV[2]))
  local lease, records, fromShard = {}, {}, {}
  for i, e in ipairs(taken) do
    lease[2 * i - 1] = deadline
    lease[2 * i] = e[1]
    records[2 * i - 1] = e[1]
    records[2 * i] = e[3] .. ':' .. e[2] .. ':' .. ARGV[3]
    if e[4] then fromShard[#fromShard + 1] = e[1] end
    local base = 5 + (i - 1) * 4
    out[base + 1] = e[1]
    out[base + 2] = e[2]
    out[base + 3] = payloads[i]
    out[base + 4] = e[3]
  end
  redis.call('ZADD', KEYS[3], unpack(lease))
  redis.call('HSET', KEYS[4], unpack(records))
  if #fromShard > 0 then
    redis.call('ZREM', KEYS[1], unpack(fromShard))
  end
end
for _, l in ipairs(late) do
  out[#out + 1] = l[1]
  out[#out + 1] = l[2]
  out[#out + 1] = l[5]
end
-- A full batch (count or byte budget), or late entries taken: more is due, the caller comes back at once; no need
-- to read what is next.
if candidates >= batch or trimmed or #late > 0 then
  out[3] = now
  return out
end
-- What is due next. Something due but held back is looked at again later, not at once (that would spin on it): a
-- schedule whose member's delivery waits for a retry at that retry time, one whose member is leased (or an expired
-- lease not taken back yet) after ARGV[4] ms.
local next = math.huge
local rest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if rest[2] then
  next = tonumber(rest[2])
  if blocked and next <= now and not trimmed then
    if seenAll then
      -- every due schedule left is blocked: look again when the earliest blocking delivery can move (its retry
      -- time; a leased one settles within a confirm round trip: ARGV[4]), or when the next schedule falls due
      next = blockedUntil
      local later = redis.call('ZRANGEBYSCORE', KEYS[1], string.format('(%d', now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      if later[2] then next = math.min(next, tonumber(later[2])) end
    else
      next = recheck
    end
  end
end
local restFlight = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if restFlight[2] then
  local f = tonumber(restFlight[2])
  if f <= now and (flightBlocked or #taken < batch) and not trimmed then f = recheck end
  next = math.min(next, f)
end
if next ~= math.huge then out[3] = next end
return out
