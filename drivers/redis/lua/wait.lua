-- wait is one attempt of a queued acquire: it takes lock KEYS[1] for owner
-- ARGV[1] if the key is free and no live waiter is ahead, and otherwise puts
-- the owner in the queue (or refreshes its place). It returns {token, pttl,
-- head}: the token when the owner holds the key (taken now, or handed over
-- earlier and not yet noticed, in which case the poll also extends the lock
-- to the owner's TTL: the hand-off may have been provisional), else 0 with
-- the holder's remaining TTL in ms and 1 when the owner is first in the
-- queue. ARGV: 1 owner, 2 ttl ms, 3 holder, 4 channel (kind and name),
-- 5 liveness ms.
local lock, owner = KEYS[1], ARGV[1]
local held = redis.call('GET', lock)
if held and string.byte(held) ~= RELEASED_BYTE then
	local token = mine(lock, held, owner, ARGV[2])
	if token ~= 0 then
		return {token, 0, 0}
	end
	enqueue(lock, owner, redis.call('TIME'), ARGV[2], ARGV[4], ARGV[3], ARGV[5])
	if string.byte(held) ~= QUEUED_BYTE then
		redis.call('SETRANGE', lock, 0, QUEUED)
	end
	local head = 0
	if redis.call('LINDEX', lock .. QUEUE, 0) == owner then
		head = 1
	end
	return {0, redis.call('PTTL', lock), head}
end
local prev = ''
if held then
	prev = string.sub(held, 2)
end
local now = redis.call('TIME')
if redis.call('EXISTS', lock .. QUEUE) == 1 then
	enqueue(lock, owner, now, ARGV[2], ARGV[4], ARGV[3], ARGV[5])
	local head, token = handoff(lock, now, owner, prev)
	if head == owner then
		return {token, 0, 0}
	end
	if head then
		local first = 0
		if redis.call('LINDEX', lock .. QUEUE, 0) == owner then
			first = 1
		end
		return {0, redis.call('PTTL', lock), first}
	end
end
return {grant(lock, owner, ARGV[2], ARGV[3], HELD, prev, now), 0, 0}
