package postgres

import "time"

// DefaultWaitPoll is how often a queued waiter checks its key when no
// notice comes, unless [WithWaitPoll] or the URL's lock_wait_poll says
// otherwise. Hand-offs do not wait for it: a release notifies the waiter it
// hands the key to. The poll is the fallback for a lost notice, and it
// keeps the waiter's place: each poll writes the waiter's liveness
// deadline, so it is a commit, and a longer interval than the engine's
// 100ms retry delay keeps idle queues cheap.
const DefaultWaitPoll = 250 * time.Millisecond

// livenessPolls is how many poll intervals a waiter may go without polling
// before a hand-off takes it for dead, even while its Driver's listening
// session is still there (a frozen host's connections stay open until TCP
// keepalive ends them).
const livenessPolls = 4

// Option configures a Driver made by [New] or [Open].
type Option func(*config)

// config is what the options set.
type config struct {
	table    string
	waitPoll time.Duration
}

func defaultConfig() config {
	return config{table: DefaultTable, waitPoll: DefaultWaitPoll}
}

// WithTable names the lock table, as "schema.table" with lowercase
// letters, digits and '_' (default [DefaultTable]). The Driver creates the
// table, its schema if missing, a waiters table "<table>_waiters" and
// functions "<table>_*" next to it on first use. Every process that shares
// locks must name the same table. A name that is not valid makes every
// call of the Driver fail with an error wrapping [ErrBadTable].
func WithTable(name string) Option {
	return func(c *config) { c.table = name }
}

// WithWaitPoll sets how often a waiter queued in AcquireWait checks its key
// when no notice comes: the fallback for a lost notice and for a holder
// whose TTL runs out (the first waiter also checks when the holder's TTL
// ends). A waiter that has not checked for 4 such intervals is taken for
// dead and loses its place. Values under 1ms are raised to 1ms; d <= 0
// keeps [DefaultWaitPoll].
func WithWaitPoll(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.waitPoll = max(d, time.Millisecond)
		}
	}
}
