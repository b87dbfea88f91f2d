package redis

import "time"

// DefaultChannel is the pub/sub channel release notices go to unless
// [WithChannel] names another.
const DefaultChannel = "zerotal_lock:released"

// DefaultFenceRetention is how long a key's fencing counter outlives the
// key's last acquisition unless [WithFenceRetention] says otherwise.
const DefaultFenceRetention = 24 * time.Hour

// Option configures a Driver made by [New].
type Option func(*config)

// config is what the options set.
type config struct {
	channel        string
	fenceRetention time.Duration
}

func defaultConfig() config {
	return config{channel: DefaultChannel, fenceRetention: DefaultFenceRetention}
}

// WithChannel sets the pub/sub channel on which releases are announced and
// waiters listen. Every Driver that shares locks must use the same channel;
// separate channels keep unrelated applications on one server from receiving
// each other's notices. An empty name keeps [DefaultChannel].
func WithChannel(name string) Option {
	return func(c *config) {
		if name != "" {
			c.channel = name
		}
	}
}

// WithFenceRetention sets how long a key's fencing counter is kept after the
// key's last acquisition; d <= 0 keeps counters forever.
//
// Tokens are drawn from the server's clock as well as the counter, so they
// keep increasing after a counter has gone (as after a restart of a server
// that keeps nothing on disk) provided the server's clock has not gone back
// by more than the time since the key's last acquisition. Keeping counters
// forever costs one small key per lock key ever used; the default of
// [DefaultFenceRetention] bounds that cost.
func WithFenceRetention(d time.Duration) Option {
	return func(c *config) {
		c.fenceRetention = max(d, 0)
	}
}
