package redis

import goredis "github.com/redis/go-redis/v9"

// The lock is a hash at KEYS[1] with the fields owner, token, acquired (server
// milliseconds), pid and host, expiring by PEXPIRE: the server's clock decides
// when it frees. Each script is one round trip; go-redis runs it by EVALSHA and
// falls back to EVAL when the server answers NOSCRIPT (after a restart or a
// SCRIPT FLUSH).
//
// Numbers that go back to Redis are formatted with '%.0f' so that no version
// of Redis's Lua-number conversion can turn a 16-digit token into "1.7e+15".
// Lua numbers are doubles: tokens stay below 2^53, where doubles are exact.

// acquireScript takes KEYS[1] for owner ARGV[1] for ARGV[2] ms, or resets the
// TTL when that owner already holds it, and returns the acquisition's fencing
// token; it returns 0 when another owner holds the key.
//
// The token is max(last token + 1, server time in microseconds). The counter
// at KEYS[2] makes tokens increase while it exists (several acquisitions in
// one microsecond, a clock stepping back a little); the clock makes them
// increase when the counter is gone (a restart without persistence, a counter
// past its retention), as long as the server's clock has not gone back past
// the last token. ARGV[3] and ARGV[4] are the holder's pid and host; ARGV[5]
// is how long, in ms, the counter outlives this acquisition (0: forever).
var acquireScript = goredis.NewScript(`
local held = redis.call('HGET', KEYS[1], 'owner')
if held then
	if held ~= ARGV[1] then
		return 0
	end
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return tonumber(redis.call('HGET', KEYS[1], 'token')) or redis.error_reply('zerotal_lock: lock hash has no token')
end
local now = redis.call('TIME')
local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local token = us
local last = tonumber(redis.call('GET', KEYS[2]))
if last and last >= token then
	token = last + 1
end
if token >= 9007199254740992 then
	return redis.error_reply('zerotal_lock: fencing counter out of range')
end
local t = string.format('%.0f', token)
if ARGV[5] == '0' then
	redis.call('SET', KEYS[2], t)
else
	redis.call('SET', KEYS[2], t, 'PX', ARGV[5])
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', t,
	'acquired', string.format('%.0f', math.floor(us / 1000)), 'pid', ARGV[3], 'host', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return token
`)

// releaseScript deletes KEYS[1] if owner ARGV[1] holds it and then publishes
// the key ARGV[3] on channel ARGV[2], so that waiters wake without polling.
// It returns 1 when it released, else 0.
var releaseScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`)

// extendScript sets KEYS[1]'s TTL to ARGV[2] ms if owner ARGV[1] holds it.
// An expired key reads as absent, so a lost lock is never taken back.
// It returns 1 when it extended, else 0.
var extendScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
	return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// forceReleaseScript deletes KEYS[1] whoever holds it and, if there was a
// holder, publishes the key ARGV[2] on channel ARGV[1].
var forceReleaseScript = goredis.NewScript(`
if redis.call('DEL', KEYS[1]) == 1 then
	redis.call('PUBLISH', ARGV[1], ARGV[2])
end
return 1
`)

// inspectScript returns KEYS[1]'s holder fields, its remaining TTL in ms and
// the server's time (seconds, microseconds), so that the expiry is read on
// the server's clock in the same instant; nil when the key is free.
var inspectScript = goredis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired', 'pid', 'host')
if not h[1] then
	return false
end
local now = redis.call('TIME')
return {h[1], h[2] or '', h[3] or '', h[4] or '', h[5] or '', redis.call('PTTL', KEYS[1]), now[1], now[2]}
`)
