-- Charges a business's fleet-wide rate cap (max-rate): a token bucket every relay instance shares. Touches one key.
-- Time is Redis TIME (microseconds), never the caller's clock, so instances with skewed clocks share one bucket.
-- KEYS[1] K:rate (hash: tokens = tokens left, a decimal; at = Redis time of the last charge, microseconds)
-- ARGV[1] rate, tokens per second (> 0)   ARGV[2] burst: most tokens the bucket holds (>= 1)
-- ARGV[3] want: most tokens to take now (0: only give back or look)
-- ARGV[4] chunk: take nothing unless at least min(want, chunk) tokens are there (so that a capped business pops
--         batches of a useful size instead of one entry per token)
-- ARGV[5] give back: tokens an earlier charge took and did not use (its pop found fewer due), added before taking
-- Returns {granted, waitMs, left}: granted = tokens taken (0..want); waitMs = how long until chunk tokens are there
-- (0: they are now); left = whole tokens left after the charge.
-- The bucket refills at rate per second up to burst; a missing key (first use, or expired after a quiet spell) is a
-- full bucket. The key expires once a full refill has passed twice, so a business whose cap was removed leaves
-- nothing behind. A rate change applies to the next charge: the tokens left are kept, at most the new burst.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local chunk = tonumber(ARGV[4])
local back = tonumber(ARGV[5])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  -- a Redis clock that stepped back refills nothing until it passes the last charge again
  tokens = tokens + (now - at) * rate / 1000000
  at = now
end
tokens = math.min(burst, tokens + back)

local granted = 0
if want > 0 and tokens >= math.min(want, chunk) then
  granted = math.min(want, math.floor(tokens))
  tokens = tokens - granted
end
local wait = 0
if tokens < chunk then
  wait = math.ceil((chunk - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'at', string.format('%d', at))
redis.call('PEXPIRE', KEYS[1], math.max(1000, math.ceil(2000 * burst / rate)))
return {granted, wait, math.floor(tokens)}
