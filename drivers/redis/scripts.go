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

// The lock is a string at KEYS[1] that expires by PX/PEXPIRE, so the server's
// clock decides when it frees. Its value is the holder, one field a line:
//
//	owner \n token \n acquired (server Unix ms) \n pid \n host
//
// A string is cheaper than a hash here: the free-key path of acquireScript is
// TIME, one SET … GET and one SET … PX. Owners never contain '\n' (the
// driver refuses them), so comparing the value's start with owner .. '\n'
// names the holder exactly. Each script is one round trip.
//
// Lua numbers are doubles, exact for integers below 2^53: tokens stay below
// that, and numbers that go back to Redis are passed as strings, so no version
// of Redis's Lua-number conversion can turn a 16-digit token into "1.7e+15".

// acquireScript takes KEYS[1] for owner ARGV[1] for ARGV[2] ms, or resets the
// TTL when that owner already holds it, and returns the acquisition's fencing
// token; it returns 0 when another owner holds the key. A contended attempt
// only reads, so waiters that poll write nothing.
//
// The token is max(last token + 1, server time in microseconds). The counter
// at KEYS[2] makes tokens increase while it exists (a clock stepping back a
// little, two acquisitions in one microsecond); the clock makes them increase
// when the counter is gone (a restart without persistence, a counter past its
// retention), as long as the server's clock has not gone back past the last
// token. ARGV[3] is the holder's "pid\nhost"; ARGV[4] is how long, in ms, the
// counter outlives this acquisition (0: forever).
var acquireScript = newScript(`
local owner = ARGV[1] .. '\n'
local held = redis.call('GET', KEYS[1])
if held then
	if string.sub(held, 1, #owner) == owner then
		redis.call('PEXPIRE', KEYS[1], ARGV[2])
		return tonumber(string.match(held, '^(%d+)\n', #owner + 1)) or redis.error_reply('zerotal_lock: lock value has no token')
	end
	if not string.find(held, '\n', 1, true) then
		return redis.error_reply('zerotal_lock: the key holds a value this driver did not write')
	end
	return 0
end
local now = redis.call('TIME')
local micros = string.format('%06d', now[2])
local t = now[1] .. micros
local token = tonumber(t)
local prev
if ARGV[4] == '0' then
	prev = redis.call('SET', KEYS[2], t, 'GET')
else
	prev = redis.call('SET', KEYS[2], t, 'PX', ARGV[4], 'GET')
end
local last = tonumber(prev)
if last and last >= token then
	token = last + 1
	if token >= 9007199254740992 then
		redis.call('SET', KEYS[2], prev, 'KEEPTTL')
		return redis.error_reply('zerotal_lock: fencing counter out of range')
	end
	t = string.format('%.0f', token)
	redis.call('SET', KEYS[2], t, 'KEEPTTL')
end
redis.call('SET', KEYS[1], owner .. t .. '\n' .. now[1] .. string.sub(micros, 1, 3) .. '\n' .. ARGV[3], 'PX', ARGV[2])
return token
`)

// releaseScript deletes KEYS[1] if owner ARGV[1] holds it and then publishes
// KEYS[1] on channel ARGV[2], so that waiters wake without polling.
// It returns 1 when it released, else 0.
var releaseScript = newScript(`
local owner = ARGV[1] .. '\n'
local held = redis.call('GET', KEYS[1])
if not held or string.sub(held, 1, #owner) ~= owner then
	return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1
`)

// extendScript sets KEYS[1]'s TTL to ARGV[2] ms if owner ARGV[1] holds it.
// An expired key reads as absent, so a lost lock is never taken back.
// It returns 1 when it extended, else 0.
var extendScript = newScript(`
local owner = ARGV[1] .. '\n'
local held = redis.call('GET', KEYS[1])
if not held or string.sub(held, 1, #owner) ~= owner then
	return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// forceReleaseScript deletes KEYS[1] whoever holds it and, if there was a
// holder, publishes KEYS[1] on channel ARGV[1].
var forceReleaseScript = newScript(`
if redis.call('DEL', KEYS[1]) == 1 then
	redis.call('PUBLISH', ARGV[1], KEYS[1])
end
return 1
`)

// inspectScript returns KEYS[1]'s value, its remaining TTL in ms and the
// server's time (seconds, microseconds), so that the expiry is read on the
// server's clock in the same instant; nil when the key is free.
var inspectScript = newScript(`
local held = redis.call('GET', KEYS[1])
if not held then
	return false
end
local now = redis.call('TIME')
return {held, redis.call('PTTL', KEYS[1]), now[1], now[2]}
`)
