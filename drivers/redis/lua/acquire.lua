-- acquire takes lock KEYS[1] for owner ARGV[1] for ARGV[2] ms, or resets the
-- TTL when that owner holds it already, and returns the acquisition's
-- fencing token; it returns 0 when the key is held, or free but owed to a
-- queued waiter (it then hands the key to that waiter: no barging past a
-- queue). ARGV[3] is the holder's "\npid\nhost".
-- A contended attempt only reads; taking a released key is GET, TIME, SET.
local lock, owner = KEYS[1], ARGV[1]
local held = redis.call('GET', lock)
local prev = ''
if held then
	if string.byte(held) ~= RELEASED_BYTE then
		return mine(lock, held, owner, ARGV[2])
	end
	prev = string.sub(held, 2)
elseif redis.call('EXISTS', lock .. QUEUE) == 1 and handoff(lock, redis.call('TIME'), '', '') then
	return 0
end
local t = next_token(prev)
redis.call('SET', lock, HELD .. owner .. '\n' .. t .. ARGV[3], 'PX', ARGV[2])
return t
