-- The helpers the scripts that touch the queue share (see constants.lua for
-- the layout).

-- next_token returns the token of a grant above prev (digits, or '' for
-- none), reading the server's clock unless now (a TIME reply) is given.
local function next_token(prev, now)
	now = now or redis.call('TIME')
	local us = now[2]
	local t = now[1] .. PAD[#us] .. us
	if #prev > #t or (#prev == #t and prev >= t) then
		local n = tonumber(prev) + 1
		if n >= MAX_TOKEN then
			error({err = 'zerotal_lock: fencing token out of range'})
		end
		t = string.format('%.0f', n)
	end
	return t
end

-- ms_of returns a TIME reply in Unix milliseconds.
local function ms_of(now)
	return now[1] * 1000 + math.floor(now[2] / 1000)
end

-- grant writes lock for owner for ttl ms with a token above prev and
-- returns the token; holder is "\npid\nhost".
local function grant(lock, owner, ttl, holder, flag, prev, now)
	local t = next_token(prev, now)
	redis.call('SET', lock, flag .. owner .. '\n' .. t .. holder, 'PX', ttl)
	return t
end

-- token_of returns the token of a held lock's value, whose owner part (with
-- its '\n') is me when the caller knows it.
local function token_of(held, me)
	if me == nil then
		return string.match(held, '\n(%d+)\n')
	end
	return string.match(held, '^%d+', #me + 2)
end

-- mine returns the token when owner holds the lock held (extending it to
-- ttl ms when ttl is given) and 0 when another owner does; it fails the
-- script for a value this driver did not write.
local function mine(lock, held, owner, ttl)
	local me = owner .. '\n'
	if string.sub(held, 2, #me + 1) == me then
		if ttl then
			redis.call('PEXPIRE', lock, ttl)
		end
		return token_of(held, me) or error({err = NO_TOKEN})
	end
	if not string.find(held, '\n', 1, true) then
		error({err = FOREIGN})
	end
	return 0
end

-- handoff pops the queue of lock until it finds a live waiter, grants it
-- the lock with a token above prev and publishes the grant (unless the
-- waiter is caller, which learns it from the reply); it returns that owner
-- and its token, or false when the queue held no live waiter.
local function handoff(lock, now, caller, prev)
	local queue, waiters = lock .. QUEUE, lock .. WAITERS
	local ms = ms_of(now)
	while true do
		local head = redis.call('LPOP', queue)
		if not head then
			redis.call('DEL', waiters)
			return false
		end
		local rec = redis.call('HGET', waiters, head)
		if rec then
			redis.call('HDEL', waiters, head)
			local deadline, ttl, channel, holder = string.match(rec, '^(%d+)\n(%d+)\n([^\n]*)(\n.*)$')
			local kind = string.byte(channel or '')
			local name = kind and string.sub(channel, 2)
			local live = head == caller
			local sure = live
			if not live and deadline and tonumber(deadline) >= ms then
				if kind == NOTICE_PUBLISH then
					live = redis.call('PUBSUB', 'NUMSUB', name)[2] > 0
					sure = live
				elseif kind == NOTICE_SHARDED then
					live = redis.call('PUBSUB', 'SHARDNUMSUB', name)[2] > 0
					sure = live
				else
					live = true
				end
			end
			if live then
				local flag = HELD
				if redis.call('LLEN', queue) > 0 then
					flag = QUEUED
				end
				local px = ttl
				if not sure then
					px = tostring(math.max(math.min(tonumber(ttl), tonumber(deadline) - ms), 1))
				end
				local token = grant(lock, head, px, holder, flag, prev, now)
				if kind and head ~= caller then
					local note = head .. '\n' .. token .. '\n' .. lock
					if not sure then
						note = note .. '\np'
					end
					if kind == NOTICE_SHARDED then
						redis.call('SPUBLISH', name, note)
					else
						redis.call('PUBLISH', name, note)
					end
				end
				return head, token
			end
		end
	end
end

-- release frees lock, whose held value is held: to the first live waiter
-- when its flag says waiters may be queued, else into a tombstone that keeps
-- its token for retention ms (for ever when '0').
local function release(lock, held, me, retention)
	local t = token_of(held, me) or '0'
	if string.byte(held) == QUEUED_BYTE and handoff(lock, redis.call('TIME'), '', t) then
		return
	end
	if retention == '0' then
		redis.call('SET', lock, RELEASED .. t)
	else
		redis.call('SET', lock, RELEASED .. t, 'PX', retention)
	end
end

-- enqueue puts owner at the back of lock's queue, or refreshes its record if
-- it is there already, and keeps the queue's keys alive for as long as a
-- waiter polls.
local function enqueue(lock, owner, now, ttl, channel, holder, liveness)
	local queue, waiters = lock .. QUEUE, lock .. WAITERS
	local rec = string.format('%.0f', ms_of(now) + liveness) .. '\n' .. ttl .. '\n' .. channel .. holder
	if redis.call('HSET', waiters, owner, rec) == 1 then
		redis.call('RPUSH', queue, owner)
	end
	if redis.call('PTTL', queue) < tonumber(liveness) then
		redis.call('PEXPIRE', queue, liveness)
		redis.call('PEXPIRE', waiters, liveness)
	end
end
