-- delay-relay AMQP intake: dictionary-adopt.lua. Makes a freshly trained zstd dictionary the business's current one,
-- unless an instance already did: every instance then compresses with the same dictionary. A dictionary, once
-- written, is never changed or removed (stored messages name it by id). Touches one key.
-- KEYS[1] K:dicts   ARGV[1] the dictionary's id (8 hex digits)   ARGV[2] the dictionary
-- Returns {id, dictionary} of the current dictionary: the one given, or the one adopted before.
local current = redis.call('HGET', KEYS[1], 'current')
if current then
  local dictionary = redis.call('HGET', KEYS[1], current)
  if dictionary then
    return {current, dictionary}
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'current', ARGV[1])
return {ARGV[1], ARGV[2]}
