-- extend sets lock KEYS[1]'s TTL to ARGV[2] ms if owner ARGV[1] holds it.
-- An expired key reads as absent, and a released one as a tombstone, so a
-- lost lock is never taken back. It returns 1 when it extended, else 0.
local lock = KEYS[1]
local me = ARGV[1] .. '\n'
local held = redis.call('GET', lock)
if not held or string.byte(held) == RELEASED_BYTE or string.sub(held, 2, #me + 1) ~= me then
	return 0
end
redis.call('PEXPIRE', lock, ARGV[2])
return 1
