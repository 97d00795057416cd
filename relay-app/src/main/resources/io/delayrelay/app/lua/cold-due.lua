-- delay-relay cold tier: cold-due.lua (read only). The cold blocks of shard i to bring back to K:i now: those whose
-- earliest entry is due before Redis TIME + the lead.
-- KEYS[1] {K:i}:cold   KEYS[2] {K:i}:cold-blocks   KEYS[3] {K:i}:cold-meta
-- ARGV[1] lead, ms   ARGV[2] at most this many blocks
-- Returns {now ms, index fan-out (0 when none is recorded), block id, block bytes, ...}, earliest first (a block
-- listed in the index zset whose bytes are gone is left out). The fan-out is what cold-promote.lua needs the parts
-- of the members computed with.
-- Clock: exactly one call of Redis TIME.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now + tonumber(ARGV[1])), 'LIMIT', 0,
    tonumber(ARGV[2]))
-- fan: "<fan-out>" (index rule 1) or "2:<fan-out>" (rule 2)
local recorded = redis.call('HMGET', KEYS[3], 'fan')[1]
local out = {string.format('%d', now), tonumber(string.match(recorded or '', '(%d+)$')) or 0}
for _, id in ipairs(ids) do
  local block = redis.call('HMGET', KEYS[2], id)[1]
  if block then
    out[#out + 1] = id
    out[#out + 1] = block
  end
end
return out
