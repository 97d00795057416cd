-- delay-relay cold tier: cold-promote.lua. Brings one cold block of shard i back into K:i (and its payloads into
-- {K:i}:payloads), atomically, and deletes the block. Only entries the member index still points at this block are
-- live: one cancelled meanwhile (cancel.lua removed it from the index) or scheduled again (schedule.lua did, and the
-- new copy is hot) is skipped; one rescheduled (reschedule.lua wrote "<block>:<due>" into the index) comes back at
-- its new due time. A block already promoted (by another relay, or by this one before a kill) is not in
-- {K:i}:cold-blocks any more: nothing is done. docs/cold-tier.md has the argument.
-- KEYS (all of shard i, one Redis Cluster slot):
--   KEYS[1] K:i   KEYS[2] {K:i}:payloads   KEYS[3] {K:i}:cold   KEYS[4] {K:i}:cold-blocks   KEYS[5] {K:i}:cold-meta
--   The member index {K:i}:cold-ix:<n> is built from KEYS[5]'s prefix: the same slot.
-- ARGV:
--   ARGV[1] block id   ARGV[2] wake channel K:wake   ARGV[3] shard index i
--   ARGV[4..] per entry of the block (the relay decoded it): member, due ms, payload ('' when none), has payload
-- Returns {entries brought back, entries skipped} or {-1, 0} when the block was gone.
-- Clock: none.
-- Cost: one HMGET and one HDEL per index part, and one ZMSCORE, ZADD and HSET for all the block's entries.
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[4], id) == 0 then
  redis.call('ZREM', KEYS[3], id)
  return {-1, 0}
end
local prefix = string.sub(KEYS[5], 1, -10)
local fan = tonumber(redis.call('HMGET', KEYS[5], 'fan')[1])
-- one command for many members, in slices that stay within Lua's stack (slices of 1000: pairs stay whole)
local function many(command, key, args)
  local reply = {}
  for i = 1, #args, 1000 do
    local part = redis.call(command, key, unpack(args, i, math.min(#args, i + 999)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do reply[#reply + 1] = v end
    end
  end
  return reply
end
local members, partOf, parts = {}, {}, {}
for k = 4, #ARGV, 4 do
  local member = ARGV[k]
  local part = prefix .. 'cold-ix:' .. (tonumber(string.sub(redis.sha1hex(member), 1, 6), 16) % fan)
  members[#members + 1] = member
  partOf[#members] = part
  local list = parts[part]
  if not list then
    list = {}
    parts[part] = list
  end
  list[#list + 1] = #members
end
-- Redis Cluster, the slot in migration: an index part not on this node (moved already, or not created yet) fails a
-- script at its first access and keeps what it wrote before (on the source), or reads as empty (on the target, sent
-- there by ASK). So every part is touched first, with KEYS[1], in one multi-key read: it fails there (TRYAGAIN or
-- "non local key") unless all are here, before anything is written (a block promoted there unread
-- would be deleted with its entries); the mover retries next period.
local touched = {}
for part in pairs(parts) do touched[#touched + 1] = part end
many('EXISTS', KEYS[1], touched)
-- where the index points each member: its block id, or "<block id>:<due ms>" after a reschedule
local at = {}
for part, list in pairs(parts) do
  local fields = {}
  for _, j in ipairs(list) do fields[#fields + 1] = members[j] end
  local reply = many('HMGET', part, fields)
  for i, j in ipairs(list) do at[j] = reply[i] end
end
local hot = many('ZMSCORE', KEYS[1], members)
local unindex, zadd, hset = {}, {}, {}
local back, skipped, earliest, first = 0, 0, nil, nil
for j, member in ipairs(members) do
  local blockOf, moved = string.match(at[j] or '', '^(%d+):?(%d*)$')
  if blockOf == id then
    local part = partOf[j]
    unindex[part] = unindex[part] or {}
    table.insert(unindex[part], member)
    -- a hot copy is newer (the contract scripts keep one live copy; this is defence in depth)
    if not hot[j] then
      local k = 4 * j
      local due = moved ~= '' and moved or ARGV[k + 1]
      zadd[#zadd + 1] = due
      zadd[#zadd + 1] = member
      if ARGV[k + 3] == '1' then
        hset[#hset + 1] = member
        hset[#hset + 1] = ARGV[k + 2]
      end
      back = back + 1
      if not earliest or tonumber(due) < earliest then earliest, first = tonumber(due), member end
    else
      skipped = skipped + 1
    end
  else
    skipped = skipped + 1
  end
end
for part, fields in pairs(unindex) do
  many('HDEL', part, fields)
end
if #zadd > 0 then many('ZADD', KEYS[1], zadd) end
if #hset > 0 then many('HSET', KEYS[2], hset) end
redis.call('HDEL', KEYS[4], id)
redis.call('ZREM', KEYS[3], id)
if first then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if head[1] == first then
    redis.call('PUBLISH', ARGV[2], ARGV[3] .. ':' .. string.format('%d', earliest))
  end
end
return {back, skipped}
