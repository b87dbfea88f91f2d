// Package redis is the zerotal lock driver for Redis: it coordinates
// goroutines, processes and hosts that share one Redis deployment.
//
// Open a driver from a URL (or $REDIS_URL), or wrap a go-redis client the
// application already has with [New]; cluster, sentinel and ring clients work
// through redis.UniversalClient.
//
//	d, err := redis.Open("redis://:secret@redis.internal:6379/0")
//
// # Operations
//
// Every operation is one round trip: acquire, release, extend, force release,
// inspect and each attempt of a queued acquire are Lua scripts run by EVALSHA
// (EVAL when the server has forgotten the script), and Exists is GET. A held
// lock is a string holding the owner, its fencing token, the server time it
// was taken, and the holder's pid and host; it expires by PX, so the
// server's clock decides when it frees, never the client's. A released lock
// becomes a tombstone that keeps only its last token. Taking a released key
// is GET, TIME and SET of that one key, releasing it GET and SET; a
// contended plain acquire only reads, and nothing is published unless a
// waiter is queued.
//
// # Waiting in line
//
// The Driver is a driver.Waiter: a blocking acquire waits in a first come,
// first served queue kept on the server, next to the lock and in its hash
// slot, so waiters in every process share one line. An attempt that finds
// the key held puts its owner at the back of the queue, and marks the lock
// so that its release looks at the queue. A release (or a force release)
// then hands the key over inside the same script: it writes the lock for the
// first live waiter, with that waiter's TTL and a new fencing token, and
// publishes the grant on that waiter's Driver's channel. The waiter returns
// when the notice arrives, without another round trip, and nobody can take
// the key in between: a holder that asks again right after its release
// queues behind the waiters already there, and a plain acquire of a free key
// that a queue is owed hands it to the queue's head and reports contention
// (no barging).
//
// Each Driver listens on one channel of its own ([DefaultChannelPrefix] and
// a random id), on one pub/sub connection opened when a waiter first queues,
// so a hand-off notice reaches one connection and wakes one waiter, and an
// uncontended Driver never subscribes. Notices can be lost; a waiter also
// polls every [WithWaitPoll] interval (default [DefaultWaitPoll]), and the
// first in line polls when the holder's TTL ends, since nothing announces an
// expiry: whoever finds a free key with a queue hands it to the head. When
// the subscription is restored after a reconnect, every waiter polls at once.
//
// A waiter that gives up (its ctx ends, its Driver closes) leaves the queue,
// and passes on a key handed to it meanwhile. A waiter that dies is skipped:
// a waiter is dead when it has not polled for 5 poll intervals, and with a
// client on one server (standalone or sentinel) sooner, when the server says
// its Driver is no longer subscribed (PUBSUB NUMSUB): the server drops a
// killed process's subscription as soon as its socket closes. A cluster node
// only counts its own subscribers, so with cluster and ring clients the
// deadline alone decides.
// A ring client publishes on the key's shard but listens on the channel's,
// so its waiters learn of hand-offs by polling.
//
// # Keys
//
// The engine's key k is stored as "{k}", and its queue as "{k}:q" (a list of
// owners) and "{k}:w" (a hash of waiter records), with '%', '{' and '}' in k
// escaped as %25, %7B and %7D. The braces make the whole key a Redis Cluster
// hash tag, so the keys of a lock share a slot whatever bytes k holds. The
// queue's keys exist only while waiters do, and expire when no waiter has
// polled for 5 poll intervals; a tombstone expires [DefaultFenceRetention]
// after the release ([WithFenceRetention]).
//
// # Fencing tokens
//
// A token is max(last token + 1, server time in microseconds), minted in the
// script that grants the key; the last token is the releasing holder's, kept
// in the tombstone or passed along in a hand-off. Tokens increase per key
// across release, hand-off and expiry and, because they follow the server's
// clock, across a restart that lost every key (a server without
// persistence), a restore of an older snapshot and a failover to a replica
// that lagged behind. What they rely on: the clock of the server that mints
// them does not go back past the last token it issued for the key, including
// across restarts and failovers (a released key also survives a clock that
// steps back, for as long as its tombstone lives). Tokens are below 2^53
// until the year 2255.
//
// # Guarantees
//
// Mutual exclusion holds on a single Redis server (or a cluster shard's
// primary) for as long as it keeps its data. Replication is asynchronous:
// after a failover the new primary may not have a lock the old one granted,
// and two holders can coexist until the TTL runs out. This driver does not
// implement Redlock; fencing tokens, checked by the protected resource, are
// the way to stay correct through such failures. Redis 6.2 or newer is
// needed (SET … GET; scripts read TIME before writing).
package redis
