-- The layout every script of the lock driver agrees on, and its constants.
-- The driver loads them, with lib.lua and the scripts, once as a Redis
-- Function library (Redis 7 and later), or sends them ahead of each script
-- to EVAL (older servers); see scripts.go.
--
-- A lock is one string key, K (the driver's hash-tagged name, see keys.go),
-- in one of three states:
--
--   absent                        free; never taken, or its holder's TTL ran out
--   '~' token                     free; released: a tombstone that keeps the
--                                 last token, until the fence retention passes
--   flag owner \n token \n pid \n host
--                                 held, until its PX runs out by the server's clock
--
-- The flag of a held lock is 'q' when waiters may be queued, so a release
-- must look at the queue, and '-' when none were, so a release only writes a
-- tombstone. Owners never contain '\n' (the driver refuses them), so the
-- bytes after the flag up to the first '\n' name the holder exactly.
--
-- Waiters queue in two more keys of the same hash slot: K .. ':q', a list of
-- owners, first come first, and K .. ':w', a hash from owner to its record
--
--   deadline (server Unix ms) \n ttl ms \n channel \n pid \n host
--
-- where channel is how the waiter's Driver hears of a hand-off: '' when it
-- does not, else a kind byte and the channel's name. 'p': PUBLISH on a
-- channel the server can count the subscribers of (PUBSUB NUMSUB: one
-- server, standalone or behind Sentinel); 's': SPUBLISH on a shard channel
-- in the lock's own hash slot (a Redis Cluster node counts those with PUBSUB
-- SHARDNUMSUB); 'g': PUBLISH to a channel the whole cluster relays and no
-- node can count (a cluster without sharded pub/sub). The scripts name only K to Redis and derive the other two, which
-- share its hash tag: the common paths touch K alone, and a call that names
-- fewer keys costs the server less.
--
-- A token is max(last token + 1, server time in microseconds), as decimal
-- digits; it is also when the lock was granted (exactly, unless the clock
-- went back). The last token comes from the tombstone (or, for a hand-off, from
-- the releasing holder), so tokens increase across a release even if the
-- server's clock steps back; the clock makes them increase where the last
-- token is gone or stale: after the holder's TTL ran out, a restart without
-- persistence or from an older snapshot, a failover to a replica that
-- lagged, a tombstone past its retention. Tokens stay below 2^53 (Lua's
-- numbers are doubles), and are compared and passed as strings, so the
-- common path never converts one to a number.
--
-- Hand-off happens on the server: whoever finds the lock free with a queue
-- (the releasing holder, a waiter polling after an expiry, a plain acquire)
-- writes the lock for the first live waiter, with that waiter's TTL and a
-- new token, and publishes the grant on its channel. A waiter is live while
-- its deadline, pushed out by each of its polls, has not passed and, when
-- the server can count that (kinds 'p' and 's'), its Driver is subscribed
-- to its channel. A waiter whose liveness
-- only its deadline vouches for gets the key provisionally, until that
-- deadline: its next poll, or its confirmation of a notice marked 'p',
-- extends the lock to its TTL.

local HELD = '-'
local QUEUED = 'q'
local RELEASED = '~'
local RELEASED_BYTE = 126
local QUEUED_BYTE = 113
local QUEUE = ':q'
local WAITERS = ':w'
local NOTICE_PUBLISH = 112 -- 'p'
local NOTICE_SHARDED = 115 -- 's'
local MAX_TOKEN = 9007199254740992 -- 2^53
-- PAD[n] pads n digits of microseconds to six.
local PAD = {'00000', '0000', '000', '00', '0', ''}

local FOREIGN = 'zerotal_lock: the key holds a value this driver did not write'
local NO_TOKEN = 'zerotal_lock: lock value has no token'
