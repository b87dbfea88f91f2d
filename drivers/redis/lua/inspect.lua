-- inspect returns lock KEYS[1]'s value, its remaining TTL in ms and the
-- server's time (seconds, microseconds), so that the expiry is read on the
-- server's clock in the same instant; nil when the key is free.
local held = redis.call('GET', KEYS[1])
if not held or string.byte(held) == RELEASED_BYTE then
	return false
end
local now = redis.call('TIME')
return {held, redis.call('PTTL', KEYS[1]), now[1], now[2]}
