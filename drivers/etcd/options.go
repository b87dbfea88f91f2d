package etcd

import "time"

// DefaultPrefix starts every key the driver writes unless [WithPrefix]
// names another prefix.
const DefaultPrefix = "zerotal_lock/"

// DefaultOpTimeout bounds one attempt of an operation unless
// [WithOpTimeout] says otherwise. An attempt that runs out is tried again
// (every attempt is safe to repeat) as long as the caller's context allows:
// during a leader election a write sent to the old leader, or to a follower
// that has not noticed the election yet, never returns by itself.
const DefaultOpTimeout = 2 * time.Second

// DefaultWaiterTTL is the TTL of the lease that keeps a Driver's place in
// wait queues unless [WithWaiterTTL] says otherwise: how long a waiter whose
// process died (or froze) keeps the waiters behind it waiting.
const DefaultWaiterTTL = 2 * time.Second

// DefaultDialTimeout bounds the connection to the first member when Open
// makes a client, unless the URL's dial_timeout says otherwise.
const DefaultDialTimeout = 5 * time.Second

// Option configures a Driver made by [New] or [Open].
type Option func(*config)

// config is what the options set.
type config struct {
	prefix    string
	opTimeout time.Duration
	waiterTTL time.Duration
}

func defaultConfig() config {
	return config{
		prefix:    DefaultPrefix,
		opTimeout: DefaultOpTimeout,
		waiterTTL: DefaultWaiterTTL,
	}
}

// WithPrefix sets the prefix of every key the driver writes: locks live at
// prefix + the engine's key, and their wait queues just after. Drivers that
// should share locks must use the same prefix; with etcd's RBAC, grant the
// driver's user read and write on the prefix range. An empty prefix keeps
// [DefaultPrefix].
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if prefix != "" {
			c.prefix = prefix
		}
	}
}

// WithOpTimeout sets how long one attempt of an operation may take before
// it is abandoned and tried again; d <= 0 keeps [DefaultOpTimeout]. Shorter
// attempts recover sooner from a failover, longer ones spare a slow disk
// from retries; the caller's context bounds the whole operation either way.
func WithOpTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.opTimeout = d
		}
	}
}

// WithWaiterTTL sets the TTL of the lease that holds a Driver's waiters in
// the wait queues, kept alive while it has waiters; d <= 0 keeps
// [DefaultWaiterTTL]. It is rounded up to whole seconds, and the server
// raises it to its minimum lease TTL. A waiter whose process dies leaves its
// queue this long after its last keep-alive.
func WithWaiterTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.waiterTTL = d
		}
	}
}
