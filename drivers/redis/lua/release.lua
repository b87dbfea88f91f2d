-- release frees lock KEYS[1] if owner ARGV[1] holds it and returns 1, else
-- 0. When waiters are queued the key goes straight to the first live one.
-- ARGV: 1 owner, 2 retention ms.
local lock, owner = KEYS[1], ARGV[1]
local held = redis.call('GET', lock)
local n = #owner
if not held or string.byte(held) == RELEASED_BYTE or string.byte(held, n + 2) ~= 10 or string.sub(held, 2, n + 1) ~= owner then
	return 0
end
local t = string.match(held, '^%d+', n + 3) or '0'
if string.byte(held) == QUEUED_BYTE and handoff(lock, redis.call('TIME'), '', t) then
	return 1
end
if ARGV[2] == '0' then
	redis.call('SET', lock, RELEASED .. t)
else
	redis.call('SET', lock, RELEASED .. t, 'PX', ARGV[2])
end
return 1
