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
// Every operation is one round trip: acquire, release, extend, force release
// and inspect are Lua scripts run by EVALSHA (EVAL when the server has
// forgotten the script), and Exists is EXISTS. A lock is a string holding
// the owner, its fencing token, the server time it was taken, and the
// holder's pid and host; it expires by PX, so the server's clock decides when
// it frees, never the client's. A contended acquire only reads. Release and
// force release PUBLISH the lock's Redis key on one channel
// ([DefaultChannel]); each Driver listens on one shared pub/sub connection
// and wakes its local waiters for that key. Expiry is not announced: waiters
// find an expired lock by polling, as they do after a lost notice.
//
// # Keys
//
// The engine's key k is stored as "{k}" and its fencing counter as
// "{k}:fence", with '%', '{' and '}' in k escaped as %25, %7B and %7D. The
// braces make the whole key a Redis Cluster hash tag, so the two keys share a
// slot whatever bytes k holds.
//
// # Fencing tokens
//
// A token is max(previous token + 1, server time in microseconds), minted in
// the acquire script. Tokens increase per key across release and expiry and,
// because they follow the server's clock, across a restart that lost every key
// (a server without persistence) or a counter dropped after
// [WithFenceRetention]. What they rely on: the clock of the server that mints
// them does not go back past the last token it issued for the key, including
// across restarts and failovers. Tokens are below 2^53 until the year 2255.
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
