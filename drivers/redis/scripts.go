package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	goredis "github.com/redis/go-redis/v9"
)

// luaScript is a Lua script run by EVALSHA, and by EVAL when the server
// answers NOSCRIPT (after a restart or a SCRIPT FLUSH). It is go-redis's
// Script.Run without the copies: the caller builds the whole command in one
// slice, so a call allocates that slice and little else.
type luaScript struct {
	src any // the source, boxed once
	sha any // its SHA-1 in hex, boxed once
}

func newScript(src string) *luaScript {
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, sha: hex.EncodeToString(sum[:])}
}

// run sends cmd, whose first two elements it fills with the command name and
// the script, followed by numkeys, the keys and the arguments.
func (s *luaScript) run(ctx context.Context, c goredis.UniversalClient, cmd []any) *goredis.Cmd {
	cmd[0], cmd[1] = "evalsha", s.sha
	reply := c.Do(ctx, cmd...)
	if goredis.HasErrorPrefix(reply.Err(), "NOSCRIPT") {
		cmd[0], cmd[1] = "eval", s.src
		reply = c.Do(ctx, cmd...)
	}
	return reply
}

// The Redis keys of one lock share a hash slot (see redisKeys) and are passed
// to every script that may touch the queue in this order:
//
//	KEYS[1] the lock
//	KEYS[2] the queue: a list of waiting owners, first come first
//	KEYS[3] the waiters: a hash from owner to its waiter record
//
// The lock is a string in one of three states:
//
//	absent                  free; never taken, or its holder's TTL ran out
//	'~' token               free; released (a tombstone that keeps the last
//	                        token, and expires after the fence retention)
//	flag owner \n token \n acquired (server Unix ms) \n pid \n host
//	                        held, until its PX runs out by the server's clock
//
// The flag of a held lock is 'q' when waiters may be queued, so release must
// look at the queue, and '-' when none were, so release only rewrites the
// lock as a tombstone. Owners never contain '\n' (the driver refuses them),
// so comparing the bytes after the flag with owner .. '\n' names the holder
// exactly.
//
// A token is max(last token + 1, server time in microseconds). The last
// token comes from the tombstone (or, for a hand-off, from the releasing
// holder), so tokens increase across a release even if the server's clock
// steps back; the clock makes them increase where the last token is gone or
// stale: after the holder's TTL ran out, a restart without persistence or
// from an older snapshot, a failover to a replica that lagged, a tombstone
// past its retention. Reading the clock on every grant is what covers a
// stale tombstone: counting on from it would hand out the tokens issued
// after the snapshot a second time. A free key that was released is a
// tombstone rather than nothing, so that taking it is GET, TIME, SET on one
// key, and releasing it is GET, SET: no separate counter to read and write,
// and no queue to look for (waiters only queue behind a holder, and a
// release with waiters hands the key over rather than leaving a tombstone).
//
// A waiter record is
//
//	deadline (server Unix ms) \n ttl ms \n channel \n pid \n host
//
// channel is the waiter's Driver's notice channel, "" when it has none.
//
// Hand-off happens on the server: whoever finds the lock free with a queue
// (the releasing holder, a waiter polling after an expiry, a plain acquire)
// writes the lock for the first live waiter, with that waiter's TTL and a
// new token, and PUBLISHes the grant on its channel. The waiter learns it
// holds the key from that notice, or from its next poll if the notice is
// lost: no second round trip, and no window in which someone else can take
// the key. A waiter is live while its deadline, pushed out by each of its
// polls, has not passed and, when the server can count that (ARGV numsub =
// '1': pub/sub and scripts on one server), its Driver is subscribed to its
// channel. The subscription alone is not enough: a frozen host's
// connections stay subscribed until TCP keepalive drops them, and each of
// its waiters would be handed the key in turn and sit on it for a whole TTL.
// The count only shortens the deadline, for a Driver that closed or died.
//
// Lua numbers are doubles, exact for integers below 2^53: tokens stay below
// that, and numbers that go back to Redis are passed as strings formatted
// with %.0f, so Lua's "%.14g" never turns a 16-digit token into "1.7e+15".

// lockPrelude holds the Lua functions the queue-aware scripts share.
//
// grant writes the lock for owner with a new token, above prev, and
// returns the token.
//
// release frees the held lock value held: it goes to the first live waiter
// if its flag says waiters may be queued, and otherwise becomes a tombstone
// that keeps its token for retention ms (for ever when '0').
//
// handoff pops waiters until it finds a live one, grants it the lock with a
// token above prev and publishes the grant (unless the waiter is the
// caller, which learns it from the reply); it returns that owner and its
// token, or false when the queue held no live waiter.
//
// enqueue puts owner at the back of the queue, or refreshes its record if it
// is already there, and keeps the queue's keys alive for as long as a waiter
// polls.
const lockPrelude = `
local function grant(owner, ttl, holder, flag, now, prev)
	local micros = string.format('%06d', now[2])
	local t = now[1] .. micros
	local token = tonumber(t)
	if prev >= token then
		token = prev + 1
		if token >= 9007199254740992 then
			error({err = 'zerotal_lock: fencing token out of range'})
		end
		t = string.format('%.0f', token)
	end
	redis.call('SET', KEYS[1], flag .. owner .. '\n' .. t .. '\n' .. now[1] .. string.sub(micros, 1, 3) .. '\n' .. holder, 'PX', ttl)
	return token
end

local function handoff(now, numsub, caller, prev)
	local ms = now[1] * 1000 + math.floor(now[2] / 1000)
	while true do
		local head = redis.call('LPOP', KEYS[2])
		if not head then
			redis.call('DEL', KEYS[3])
			return false
		end
		local rec = redis.call('HGET', KEYS[3], head)
		if rec then
			redis.call('HDEL', KEYS[3], head)
			local deadline, ttl, channel, holder = string.match(rec, '^(%d+)\n(%d+)\n([^\n]*)\n(.*)$')
			local live = head == caller
			if not live and deadline and tonumber(deadline) >= ms then
				live = numsub ~= '1' or channel == '' or redis.call('PUBSUB', 'NUMSUB', channel)[2] > 0
			end
			if live then
				local flag = '-'
				if redis.call('LLEN', KEYS[2]) > 0 then
					flag = 'q'
				end
				local token = grant(head, ttl, holder, flag, now, prev)
				if channel ~= '' and head ~= caller then
					redis.call('PUBLISH', channel, head .. '\n' .. string.format('%.0f', token) .. '\n' .. KEYS[1])
				end
				return head, token
			end
		end
	end
end

local function release(held, numsub, retention)
	local t = string.match(held, '\n(%d+)\n') or '0'
	if string.byte(held) == 113 and handoff(redis.call('TIME'), numsub, '', tonumber(t)) then
		return
	end
	if retention == '0' then
		redis.call('SET', KEYS[1], '~' .. t)
	else
		redis.call('SET', KEYS[1], '~' .. t, 'PX', retention)
	end
end

local function enqueue(owner, now, ttl, channel, holder, liveness)
	local ms = now[1] * 1000 + math.floor(now[2] / 1000)
	local rec = string.format('%.0f', ms + liveness) .. '\n' .. ttl .. '\n' .. channel .. '\n' .. holder
	if redis.call('HSET', KEYS[3], owner, rec) == 1 then
		redis.call('RPUSH', KEYS[2], owner)
	end
	if redis.call('PTTL', KEYS[2]) < tonumber(liveness) then
		redis.call('PEXPIRE', KEYS[2], liveness)
		redis.call('PEXPIRE', KEYS[3], liveness)
	end
end
`

// acquireScript takes the lock for owner ARGV[1] for ARGV[2] ms, or resets
// the TTL when that owner already holds it, and returns the acquisition's
// fencing token; it returns 0 when the key is held, or free but owed to a
// queued waiter (it then hands the key to that waiter: no barging past a
// queue). ARGV[3] is the holder's "pid\nhost", ARGV[4] the numsub flag. A
// contended attempt only reads.
var acquireScript = newScript(lockPrelude + `
local held = redis.call('GET', KEYS[1])
local prev = 0
if held then
	if string.byte(held) ~= 126 then
		local me = ARGV[1] .. '\n'
		if string.sub(held, 2, #me + 1) == me then
			redis.call('PEXPIRE', KEYS[1], ARGV[2])
			return tonumber(string.match(held, '^(%d+)\n', #me + 2)) or redis.error_reply('zerotal_lock: lock value has no token')
		end
		if not string.find(held, '\n', 1, true) then
			return redis.error_reply('zerotal_lock: the key holds a value this driver did not write')
		end
		return 0
	end
	prev = tonumber(string.sub(held, 2)) or 0
elseif redis.call('EXISTS', KEYS[2]) == 1 and handoff(redis.call('TIME'), ARGV[4], '', 0) then
	return 0
end
return grant(ARGV[1], ARGV[2], ARGV[3], '-', redis.call('TIME'), prev)
`)

// waitScript is one attempt of a queued acquire: it takes the lock for owner
// ARGV[1] if the key is free and no live waiter is ahead, and otherwise puts
// the owner in the queue (or refreshes its place). It returns {token, pttl,
// head}: the token when the owner holds the key (taken now, or handed over
// earlier and not yet noticed), else 0 with the holder's remaining TTL in ms
// and 1 when the owner is first in the queue. ARGV: 1 owner, 2 ttl ms,
// 3 holder, 4 channel, 5 liveness ms, 6 numsub flag.
var waitScript = newScript(lockPrelude + `
local owner = ARGV[1]
local me = owner .. '\n'
local held = redis.call('GET', KEYS[1])
if held and string.byte(held) ~= 126 then
	if string.sub(held, 2, #me + 1) == me then
		return {tonumber(string.match(held, '^(%d+)\n', #me + 2)) or redis.error_reply('zerotal_lock: lock value has no token'), 0, 0}
	end
	if not string.find(held, '\n', 1, true) then
		return redis.error_reply('zerotal_lock: the key holds a value this driver did not write')
	end
	enqueue(owner, redis.call('TIME'), ARGV[2], ARGV[4], ARGV[3], ARGV[5])
	if string.byte(held) ~= 113 then
		redis.call('SETRANGE', KEYS[1], 0, 'q')
	end
	local head = 0
	if redis.call('LINDEX', KEYS[2], 0) == owner then
		head = 1
	end
	return {0, redis.call('PTTL', KEYS[1]), head}
end
local prev = 0
if held then
	prev = tonumber(string.sub(held, 2)) or 0
end
local now = redis.call('TIME')
if redis.call('EXISTS', KEYS[2]) == 1 then
	enqueue(owner, now, ARGV[2], ARGV[4], ARGV[3], ARGV[5])
	local head, token = handoff(now, ARGV[6], owner, prev)
	if head == owner then
		return {token, 0, 0}
	end
	if head then
		local first = 0
		if redis.call('LINDEX', KEYS[2], 0) == owner then
			first = 1
		end
		return {0, redis.call('PTTL', KEYS[1]), first}
	end
end
return {grant(owner, ARGV[2], ARGV[3], '-', now, prev), 0, 0}
`)

// releaseScript frees the lock if owner ARGV[1] holds it and returns 1,
// else 0. When waiters are queued the key goes straight to the first live
// one. ARGV: 1 owner, 2 numsub flag, 3 retention.
var releaseScript = newScript(lockPrelude + `
local me = ARGV[1] .. '\n'
local held = redis.call('GET', KEYS[1])
if not held or string.byte(held) == 126 or string.sub(held, 2, #me + 1) ~= me then
	return 0
end
release(held, ARGV[2], ARGV[3])
return 1
`)

// leaveScript takes owner ARGV[1] out of the queue when its wait ends
// without the key. If the key was handed to it meanwhile, it releases the
// key (to the next waiter) and returns 1; else 0. A free key with a queue
// (its holder expired) goes to the next waiter at once rather than at that
// waiter's next poll. ARGV: 1 owner, 2 numsub flag, 3 retention.
var leaveScript = newScript(lockPrelude + `
if redis.call('HDEL', KEYS[3], ARGV[1]) == 1 then
	redis.call('LREM', KEYS[2], 1, ARGV[1])
end
local me = ARGV[1] .. '\n'
local held = redis.call('GET', KEYS[1])
if held and string.byte(held) ~= 126 then
	if string.sub(held, 2, #me + 1) ~= me then
		return 0
	end
	release(held, ARGV[2], ARGV[3])
	return 1
end
if redis.call('EXISTS', KEYS[2]) == 1 then
	local prev = 0
	if held then
		prev = tonumber(string.sub(held, 2)) or 0
	end
	handoff(redis.call('TIME'), ARGV[2], '', prev)
end
return 0
`)

// forceReleaseScript frees the lock whoever holds it, handing it to the
// first live waiter if there is one. A key holding something this driver did
// not write is deleted. ARGV: 1 numsub flag, 2 retention.
var forceReleaseScript = newScript(lockPrelude + `
local held = redis.pcall('GET', KEYS[1])
if type(held) ~= 'string' then
	redis.call('DEL', KEYS[1])
	return 1
end
if string.byte(held) == 126 then
	return 1
end
if not string.find(held, '\n', 1, true) then
	redis.call('DEL', KEYS[1])
	return 1
end
release(held, ARGV[1], ARGV[2])
return 1
`)

// extendScript sets the lock's TTL to ARGV[2] ms if owner ARGV[1] holds it.
// An expired key reads as absent, and a released one as a tombstone, so a
// lost lock is never taken back. It returns 1 when it extended, else 0.
var extendScript = newScript(`
local me = ARGV[1] .. '\n'
local held = redis.call('GET', KEYS[1])
if not held or string.byte(held) == 126 or string.sub(held, 2, #me + 1) ~= me then
	return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// inspectScript returns the lock's value, its remaining TTL in ms and the
// server's time (seconds, microseconds), so that the expiry is read on the
// server's clock in the same instant; nil when the key is free.
var inspectScript = newScript(`
local held = redis.call('GET', KEYS[1])
if not held or string.byte(held) == 126 then
	return false
end
local now = redis.call('TIME')
return {held, redis.call('PTTL', KEYS[1]), now[1], now[2]}
`)
