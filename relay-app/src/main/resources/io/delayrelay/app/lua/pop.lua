-- Leases the due entries of one or more shards to the caller: due retries first, then due schedules. Never parses
-- the message. Time is Redis TIME, never the caller's clock.
-- KEYS: A carried ack sections of five keys each (ack.lua's KEYS: K:i, {K:i}:payloads, {K:i}:inflight,
--   {K:i}:attempts, {K:i}:dead), then six keys per shard popped, in the order the caller wants them served
--   (earliest due first): K:i (zset), {K:i}:payloads, {K:i}:inflight, {K:i}:attempts, {K:i}:dead,
--   {K:i}:dead-reasons (written only when the late policy takes an entry). Several shards or any section: standalone
--   Redis only (a cluster refuses keys of several slots); one shard and no section touch one Redis Cluster slot.
-- ARGV[1] batch size of the whole call   ARGV[2] lease in ms
-- ARGV[3] lease token (unique per pop; ack and requeue must present it; the same for every shard of the call)
-- ARGV[4] ms after which a due schedule held back by its member's leased delivery is looked at again (one held back
--         by a delivery waiting for its retry is looked at again at that retry time)
-- ARGV[5] byte budget of the whole call (members plus payloads; 0: none): a shard's batch ends before the entry that
--         would exceed it; one entry is always taken while nothing was taken before; entries left out stay due
-- ARGV[6] one character per shard, '1' when the caller knows the shard has due entries (its last pop of it came back
--         full, or a peek read a due entry): the emptiness probe (EXISTS and two ZRANGEs before TIME) is skipped
-- ARGV[7] max lateness in ms (empty or negative: none): an entry this pop would hand out more than that after its
--         original due time (kept across retries) is late
-- ARGV[8] what happens to a late entry: 'drop' (removed, its payload too unless a schedule or dead letter of the id
--         still needs it) or anything else: 'dead' (to {K:i}:dead, reason "expired: ...", replayable)
-- ARGV[9] lead L in ms (pop-ahead; 0: none), see Pop-ahead
-- ARGV[10] A, the number of carried ack sections; ARGV[11..] the sections as ack.lua's ARGV of several shards
--         (lease token, payload flag, member count, members)
-- Returns {settled, {section, error, ...}, shards, reply of shard 1, reply of shard 2, ...}; a shard's reply is
--   {now, n, nextDue, expired, late, member1, due1, payload1, failed1, member2, ..., lateMember1, lateDue1,
--   lateExpiry1, ...}: the n entries handed out, then the late ones (lateExpiryX = the per-message expiry that made
--   it late, or '' when max-lateness did)
--   n = 0: nothing due; nextDue = the earliest score in K:i or inflight, or -1 when both are empty (then now = 0:
--          an empty shard, the common idle case, costs one EXISTS and no TIME).
--   n > 0: nextDue = the earliest score left (-1 when empty), or now when the batch came back full (count or byte
--          budget): more is due, the caller comes back at once, so the two ZRANGEs that would say so are skipped.
--          dueX is the entry's original due time (kept across retries, so the AMQP message id is too; the score's
--          text, so a raw ZADD's fraction reaches the relay, which rounds it up), payloadX is
--          nil when the member has no payload, failedX counts earlier failed deliveries.
--   expired = how many leases of this shard this pop saw expired (deadline passed, still held by a token; at most
--          2 x batch are looked at): the caller takes them back at once with requeue.lua 'expired' (that counts the
--          failed attempt). No periodic reaper round looks for them: every shard is popped at least once per
--          safety sweep or max-idle, and a pop's nextDue includes the earliest lease deadline.
--   A shard left out because the call's batch size or byte budget was used up by the shards before it answers
--   {now, 0, -2, 0, 0} (-2: not looked at, not even probed; it is still due).
-- Late policy. An entry is also late past its per-message expiry: a payload written by contract v2's schedule.lua
--   with options starts "\255DR2:<expiry epoch ms>:" (docs/redis-contract.md); the expiry counts for a delivery
--   whose original due time is at or before it, so a replayed dead letter (a new delivery due at the replay time)
--   is published, and max-lateness counts from the replay time. Late entries are taken from the batch's candidates
--   (they count towards the batch size, not the byte budget) and never handed out; a pop that took any reports
--   nextDue = now (more may be due).
-- Ownership. A member has at most one unsettled delivery, held in {K:i}:inflight: leased (score = lease deadline)
--   or waiting for its retry (score = retry time). {K:i}:attempts[member] describes it:
--   "<failed>:<original due>:<lease token>", the token empty while it waits for its retry. Only the holder of the
--   token may ack, retry or release it; requeue.lua 'expired' takes back leases whose deadline passed. A schedule in
--   K:i of a member with an unsettled delivery stays in K:i until that delivery settles: the delivery in flight and
--   the new schedule both happen, one after the other.
-- Clock: the script reads the time in exactly one call of Redis TIME (Redis time, never the caller's). The contract's
--   model test (ContractModelTest) runs a copy with that one call replaced by a read of a clock the test sets.
-- Several shards. Each shard takes what the shards before it left of the batch size and byte budget (late entries
--   count towards the batch size, as above). Every shard's reads come before the first write of any shard, so a key
--   of the wrong type in one shard fails the call before anything moved (the caller then pops the shards one by one
--   to find it). TIME is read once per call, when the first shard that is not empty is reached, and not at all when
--   every shard is empty.
-- Carried acks. Every section is settled by ack.lua's settle (lib/settle.lua, included by both: lease token
--   checked, payload invariant kept) before the first shard is read, so a member settled here and scheduled again
--   can be popped by this call. A section that fails (a key of the wrong type) fails only itself: its error is
--   reported, the other sections and the pop go on (its members are settled, or not, as ack.lua would leave them;
--   settling again changes nothing).
-- Pop-ahead. With L > 0 the schedules of K:i due by now + L (the horizon; now is this call's Redis TIME) are taken
--   too, not only those due by now: the caller publishes each one when its due time comes (waiting on its own clock,
--   never before it). Due retries and expired leases in inflight are looked at up to now only (a retry is published
--   at once when taken, so it is never taken before its retry time), and the late policy compares with now as before
--   (an entry taken ahead is not late). The lease deadline stays now + ARGV[2]: the caller keeps L well below the
--   lease.
-- include: lib/settle.lua

local lead = math.max(0, tonumber(ARGV[9]) or 0)
local sections = tonumber(ARGV[10]) or 0
local ackKeys = sections * 5
local groups = (#KEYS - ackKeys) / 6
local flags = ARGV[6]
local function key(g, i)
  return KEYS[ackKeys + (g - 1) * 6 + i]
end
local settled, ackErrors = 0, {}
local at = 11
for s = 1, sections do
  local token, anyPayload, n = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  local members = {}
  for i = 1, n do members[i] = ARGV[at + 2 + i] end
  at = at + 3 + n
  -- a section that fails (an error reply, or a key of the wrong type met by a read) fails only itself
  local ok, result = pcall(settle, s, token, anyPayload, members)
  if ok and type(result) ~= 'table' then
    settled = settled + result
  else
    ackErrors[#ackErrors + 1] = s
    ackErrors[#ackErrors + 1] = type(result) == 'table' and (result.err or 'error') or tostring(result)
  end
end
local function isKnown(g)
  return string.sub(flags, g, g) == '1'
end
local maxLate = tonumber(ARGV[7])
if maxLate and maxLate < 0 then maxLate = nil end
local drop = ARGV[8] == 'drop'
-- The emptiness probe: an empty shard (the idle case, and most of a sweep) costs one EXISTS
local function probe(g)
  local p = {known = isKnown(g), first = {}, firstFlight = {}, empty = false}
  if not p.known then
    if redis.call('EXISTS', key(g, 1), key(g, 3)) == 0 then
      p.empty = true
    else
      p.first = redis.call('ZRANGE', key(g, 1), 0, 0, 'WITHSCORES')
      p.firstFlight = redis.call('ZRANGE', key(g, 3), 0, 0, 'WITHSCORES')
      if not p.first[2] and not p.firstFlight[2] then p.empty = true end
    end
  end
  return p
end
-- Redis time, read once, when the first shard that is not empty is reached
local now, recheck, horizon = 0, 0, 0
local function readTime()
  if now == 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    recheck = now + tonumber(ARGV[4])
    -- schedules due by the horizon are taken (pop-ahead); retries and leases by now
    horizon = now + lead
  end
end

-- Reads of one shard: what it hands out, what the late policy takes, and what its writes will be. Nothing written.
-- budget: bytes left for it (0: no byte budget, -1: used up); firstTaker: nothing was taken before it in this call
local function plan(g, p, batch, budget, firstTaker)
  if p.empty then return {out = {0, 0, -1, 0, 0}} end
  if not p.known then
    local earliest = math.huge
    if p.first[2] then earliest = tonumber(p.first[2]) end
    if p.firstFlight[2] then earliest = math.min(earliest, tonumber(p.firstFlight[2])) end
    local dueSchedule = p.first[2] and tonumber(p.first[2]) <= horizon
    local dueFlight = p.firstFlight[2] and tonumber(p.firstFlight[2]) <= now
    if not dueSchedule and not dueFlight then
      return {out = {now, 0, earliest, 0, 0}}
    end
  end
  -- taken[i] = {member, original due, failed, from K:i}
  local taken = {}
  local flightBlocked = false
  local expired = 0
  if p.known or (p.firstFlight[2] and tonumber(p.firstFlight[2]) <= now) then
    -- due retries; expired leases among them are reported, and taken back by requeue.lua (it counts the failed
    -- attempt first)
    local due = redis.call('ZRANGEBYSCORE', key(g, 3), '-inf', now, 'WITHSCORES', 'LIMIT', 0, 2 * batch)
    if #due > 0 then
      local names = {}
      for i = 1, #due / 2 do names[i] = due[2 * i - 1] end
      local records = redis.call('HMGET', key(g, 4), unpack(names))
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
          -- a lease whose deadline passed: requeue.lua's
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
  -- (the page limit is read only once a page held something back: without that, a full page fills the batch)
  local offset, pages = 0, 0
  local maxPages = math.huge
  while #taken < batch and pages < maxPages do
    local due = redis.call('ZRANGEBYSCORE', key(g, 1), '-inf', horizon, 'WITHSCORES', 'LIMIT', offset, batch)
    local n = #due / 2
    if n == 0 then
      seenAll = true
      break
    end
    local names = {}
    for i = 1, n do names[i] = due[2 * i - 1] end
    -- A member with an unsettled delivery has its {K:i}:attempts record ("<failed>:<due>:<token>", see Ownership):
    -- one HMGET finds them, and only those members are looked up in inflight (the common page, nothing held back,
    -- costs no ZMSCORE). A member in inflight without a record (never written so by a script) is not held back.
    local records = redis.call('HMGET', key(g, 4), unpack(names))
    local inFlight = {}
    local described = {}
    for i = 1, n do
      if string.match(records[i] or '', '^%d+:[^:]*:') then described[#described + 1] = names[i] end
    end
    if #described > 0 then
      local scores = redis.call('ZMSCORE', key(g, 3), unpack(described))
      local at = 1
      for i = 1, n do
        if described[at] == names[i] then
          inFlight[i] = scores[at]
          at = at + 1
        end
      end
    end
    for i, m in ipairs(names) do
      if #taken >= batch then break end
      if inFlight[i] then
        blocked = true
        local at = tonumber(inFlight[i])
        local f, _, token = string.match(records[i] or '', '^(%d+):([^:]*):(.*)$')
        if not (f and token == '' and at > now) then at = recheck end
        if at < blockedUntil then blockedUntil = at end
      else
        -- a schedule's original due time is its score; one due after now is taken ahead (pop-ahead)
        taken[#taken + 1] = {m, due[2 * i], '0', true}
      end
    end
    if n < batch then
      seenAll = true
      break
    end
    offset = offset + n
    pages = pages + 1
    if blocked and maxPages == math.huge then
      maxPages = 4 + math.ceil(redis.call('ZCARD', key(g, 3)) / batch)
    end
  end
  local out = {now, #taken, -1, expired, 0}
  local trimmed = false
  local candidates = #taken
  local late = {}
  local forget = {}
  local members, payloads = {}, {}
  local bytes = 0
  if #taken > 0 then
    for i, e in ipairs(taken) do members[i] = e[1] end
    if noPayloads[key(g, 2)] then
      -- as HMGET answers for missing fields (false: a nil would end the reply there)
      for i = 1, #members do payloads[i] = false end
    else
      payloads = redis.call('HMGET', key(g, 2), unpack(members))
    end
    -- the late policy: max-lateness from the original due time, or the message's own expiry (contract v2 options)
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
      -- reads before the first write: the dead keys' types, and what the payload invariant needs for a drop
      local expected = {[5] = 'zset', [6] = 'hash'}
      for k, want in pairs(expected) do
        local actual = redis.call('TYPE', key(g, k)).ok
        if actual ~= 'none' and actual ~= want then
          return {err = 'WRONGTYPE ' .. key(g, k) .. ' is a ' .. actual .. ', expected a ' .. want}
        end
      end
      if drop then
        for i, l in ipairs(late) do
          local stillNeeded = redis.call('ZSCORE', key(g, 5), l[1])
          if not stillNeeded and not l[4] then stillNeeded = redis.call('ZSCORE', key(g, 1), l[1]) end
          if not stillNeeded then forget[#forget + 1] = l[1] end
        end
      end
    end
  end
  if #taken > 0 then
    -- byte budget (of the entries handed out): cut before anything of them is written, so the entries left out are
    -- untouched
    if budget > 0 then
      for i = 1, #taken do
        local size = #members[i] + #(payloads[i] or '')
        if bytes + size > budget and (i > 1 or not firstTaker) then
          for j = #taken, i, -1 do
            taken[j], members[j], payloads[j] = nil, nil, nil
          end
          trimmed = true
          break
        end
        bytes = bytes + size
      end
      out[2] = #taken
    end
  end
  return {out = out, taken = taken, members = members, payloads = payloads, late = late, forget = forget,
          trimmed = trimmed, candidates = candidates, batch = batch, blocked = blocked, blockedUntil = blockedUntil,
          seenAll = seenAll, flightBlocked = flightBlocked, bytes = bytes, live = true}
end

-- The writes of one shard, then what is due next in it.
local function apply(g, pl)
  local out = pl.out
  if not pl.live then return out end
  local taken, members, payloads, late = pl.taken, pl.members, pl.payloads, pl.late
  if #late > 0 then
    local nowText = string.format('%d', now)
    for _, l in ipairs(late) do
      local m = l[1]
      if l[4] then redis.call('ZREM', key(g, 1), m) else redis.call('ZREM', key(g, 3), m) end
      redis.call('HDEL', key(g, 4), m)
      if not drop then
        local why
        if l[5] ~= '' then
          why = 'expired: past its expiry ' .. l[5]
        else
          why = 'expired: ' .. string.format('%d', now - tonumber(l[2])) .. ' ms late, max-lateness '
              .. string.format('%d', maxLate) .. ' ms'
        end
        redis.call('ZADD', key(g, 5), nowText, m)
        redis.call('HSET', key(g, 6), m, why .. ' (due: ' .. l[2] .. ') (attempts: ' .. l[3] .. ')')
      end
    end
    if #pl.forget > 0 then
      redis.call('HDEL', key(g, 2), unpack(pl.forget))
    end
  end
  if #taken > 0 then
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
    redis.call('ZADD', key(g, 3), unpack(lease))
    redis.call('HSET', key(g, 4), unpack(records))
    if #fromShard > 0 then
      redis.call('ZREM', key(g, 1), unpack(fromShard))
    end
  end
  for _, l in ipairs(late) do
    out[#out + 1] = l[1]
    out[#out + 1] = l[2]
    out[#out + 1] = l[5]
  end
  -- A full batch (count or byte budget), or late entries taken: more is due, the caller comes back at once; no need
  -- to read what is next.
  if pl.candidates >= pl.batch or pl.trimmed or #late > 0 then
    out[3] = now
    return out
  end
  -- What is due next. Something due but held back is looked at again later, not at once (that would spin on it): a
  -- schedule whose member's delivery waits for a retry at that retry time, one whose member is leased (or an
  -- expired lease not taken back yet) after ARGV[4] ms.
  local next = math.huge
  local rest = redis.call('ZRANGE', key(g, 1), 0, 0, 'WITHSCORES')
  if rest[2] then
    next = tonumber(rest[2])
    if pl.blocked and next <= now then
      if pl.seenAll then
        -- every due schedule left is blocked: look again when the earliest blocking delivery can move (its retry
        -- time; a leased one settles within a confirm round trip: ARGV[4]), or when the next schedule falls due
        next = pl.blockedUntil
        local later = redis.call('ZRANGEBYSCORE', key(g, 1), string.format('(%d', now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
        if later[2] then next = math.min(next, tonumber(later[2])) end
      else
        next = recheck
      end
    end
  end
  local restFlight = redis.call('ZRANGE', key(g, 3), 0, 0, 'WITHSCORES')
  if restFlight[2] then
    local f = tonumber(restFlight[2])
    if f <= now and (pl.flightBlocked or #taken < pl.batch) then f = recheck end
    next = math.min(next, f)
  end
  -- a fractional score (a raw ZADD's) is due once reached: the next whole ms (an integer reply would truncate it)
  if next ~= math.huge then out[3] = math.ceil(next) end
  return out
end

-- Every shard's reads, then every shard's writes: the call's batch size and byte budget go to the shards in order.
local plans = {}
local left = tonumber(ARGV[1])
local budget = tonumber(ARGV[5]) or 0
local takenSoFar = 0
for g = 1, groups do
  local pl
  if left <= 0 or budget < 0 then
    -- the call's batch size or byte budget is used up: the shard is not looked at (still due)
    pl = {out = {now, 0, -2, 0, 0}}
  else
    local p = probe(g)
    if not p.empty then readTime() end
    pl = plan(g, p, left, budget, takenSoFar == 0)
  end
  if pl.err then
    return redis.error_reply(pl.err)
  end
  plans[g] = pl
  if pl.live then
    left = left - pl.candidates
    takenSoFar = takenSoFar + #pl.taken
    if budget > 0 then
      budget = budget - pl.bytes
      if budget <= 0 then budget = -1 end
    end
  end
end
local all = {settled, ackErrors, groups}
for g = 1, groups do
  for _, v in ipairs(apply(g, plans[g])) do all[#all + 1] = v end
end
return all
