package redis

import "time"

// DefaultChannelPrefix starts the name of every Driver's notice channel unless
// [WithChannelPrefix] names another.
const DefaultChannelPrefix = "zerotal_lock:grant:"

// DefaultFenceRetention is how long a released key keeps its last fencing
// token unless [WithFenceRetention] says otherwise.
const DefaultFenceRetention = 24 * time.Hour

// DefaultWaitPoll is how often a queued waiter checks its key without a
// notice unless [WithWaitPoll] says otherwise. It matches the engine's
// default retry delay, so a waiter costs no more round trips than a polling
// one would, while hand-offs do not wait for it.
const DefaultWaitPoll = 100 * time.Millisecond

// livenessPolls is how many poll intervals a waiter may go without polling
// before it is taken for dead, even while its Driver is still subscribed
// (a frozen host's connections stay open until TCP keepalive ends them).
const livenessPolls = 5

// Option configures a Driver made by [New].
type Option func(*config)

// config is what the options set.
type config struct {
	channelPrefix    string
	fenceRetention   time.Duration
	waitPoll         time.Duration
	sharedRoundTrips bool
}

func defaultConfig() config {
	return config{
		channelPrefix:  DefaultChannelPrefix,
		fenceRetention: DefaultFenceRetention,
		waitPoll:       DefaultWaitPoll,
	}
}

// WithSharedRoundTrips sets whether calls that run at the same time on one
// server share round trips: a call made while another is in flight goes
// into go-redis's auto-pipeliner (its full-duplex form, one held connection
// that streams commands and replies), which batches the concurrent calls of
// all goroutines into one write and one read; a call made alone goes
// straight to a pooled connection, as without sharing. A shared call still
// returns as soon as its ctx ends (its command may then still be sent, as
// a command cut off by a deadline can be). It applies to a *redis.Client
// (one server, standalone or behind Sentinel); cluster and ring clients
// ignore it.
//
// Open turns it on for the clients it makes; New leaves it off, since it
// starts the pipeliner of the caller's client, which the client's Close
// stops: pass WithSharedRoundTrips(true) to New to use it there too.
func WithSharedRoundTrips(on bool) Option {
	return func(c *config) { c.sharedRoundTrips = on }
}

// WithChannelPrefix sets how the names of the Drivers' notice channels
// start. Each Driver listens on its own channel, the prefix followed by a
// random id, and a hand-off is published only there; an ACL then needs
// "&<prefix>*". An empty prefix keeps [DefaultChannelPrefix].
func WithChannelPrefix(prefix string) Option {
	return func(c *config) {
		if prefix != "" {
			c.channelPrefix = prefix
		}
	}
}

// WithFenceRetention sets how long a released key keeps its last fencing
// token, in a small tombstone at the lock's own Redis key; d <= 0 keeps
// tombstones forever.
//
// Tokens are drawn from the server's clock as well as the last token, so
// they keep increasing after a tombstone has gone (as after a restart of a
// server that keeps nothing on disk) provided the server's clock has not
// gone back past the last token. Keeping tombstones forever costs one small
// key per lock key ever used; the default of [DefaultFenceRetention] bounds
// that cost.
func WithFenceRetention(d time.Duration) Option {
	return func(c *config) {
		c.fenceRetention = max(d, 0)
	}
}

// WithWaitPoll sets how often a waiter queued in AcquireWait checks its key
// when no notice comes: the fallback for a lost notice and for a holder
// whose TTL runs out (the first waiter also checks when the holder's TTL
// ends). A waiter that has not checked for 5 such intervals is taken for
// dead and loses its place. Values under 1ms are raised to 1ms; d <= 0
// keeps [DefaultWaitPoll].
func WithWaitPoll(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.waitPoll = max(d, time.Millisecond)
		}
	}
}
