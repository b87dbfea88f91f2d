-- leave takes owner ARGV[1] out of lock KEYS[1]'s queue when its wait ends
-- without the key. If the key was handed to it meanwhile, it releases the
-- key (to the next waiter) and returns 1; else 0. A free key with a queue
-- (its holder expired) goes to the next waiter at once rather than at that
-- waiter's next poll. ARGV: 1 owner, 2 retention ms.
local lock, owner = KEYS[1], ARGV[1]
if redis.call('HDEL', lock .. WAITERS, owner) == 1 then
	redis.call('LREM', lock .. QUEUE, 1, owner)
end
local me = owner .. '\n'
local held = redis.call('GET', lock)
if held and string.byte(held) ~= RELEASED_BYTE then
	if string.sub(held, 2, #me + 1) ~= me then
		return 0
	end
	release(lock, held, me, ARGV[2])
	return 1
end
if redis.call('EXISTS', lock .. QUEUE) == 1 then
	local prev = ''
	if held then
		prev = string.sub(held, 2)
	end
	handoff(lock, redis.call('TIME'), '', prev)
end
return 0
