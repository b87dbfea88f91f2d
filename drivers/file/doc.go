// Package file is the lock-directory driver: each lock is a directory in one
// shared directory, so it coordinates every process that can write there, on
// one host or, with the caveats below, on several hosts sharing a filesystem.
//
// Layout of the lock directory given to [Open]:
//
//	<dir>/<readable>-<sha256 hex>/          one lock (see lockPath for names)
//	    lease.0.<expires ns>.<owner>        holder record (JSON): owner, pid,
//	                                        pid start time, host, pid scope,
//	                                        acquired at, lease at acquisition
//	    lease.<n>.<expires ns>.<owner>      the lease as Extend renewed it
//	<dir>/.pending-<random>/                a lock being built, or Open's probe
//	<dir>/.sweep-<random>/                  an abandoned pending lock being deleted
//
// A lock is published atomically: built under a pending name, then renamed
// onto its lock name, which fails while another lock is there. The lease (the
// lock's TTL) is the newest lease entry; only Extend, called by the engine's
// refresh, renews it. The driver runs no goroutine or timer of its own: a lock
// nobody refreshes ends at its TTL.
//
// A lock is stale, and the next Acquire reclaims it, when it has no readable
// lease, its lease has passed, its holder record is unreadable, or its holder
// is a dead process on this host (same host name, boot and pid namespace; on
// Linux only), where a pid counts as dead when no such process exists, it is
// a zombie, or it started at another time than recorded (so a recycled pid is
// never taken for the holder). Holders elsewhere free their locks by lease
// expiry only. lockdir.go explains why reclaiming, extending and releasing
// are race-free against each other.
//
// A [Driver] implements driver.Driver, driver.Extender, driver.Inspector and
// driver.Notifier (notices between Drivers of one process only). It does not
// implement driver.Fencer: a directory has no counter that only grows and
// that a paused holder could be checked against, so locks have token 0 ("no
// fencing") rather than tokens that would promise what they cannot.
//
// Leases are wall-clock Unix nanoseconds written by the acquiring process and
// read by every other, so processes on different hosts must have roughly
// synchronised clocks (skew eats into the TTL), and a clock step on one host
// moves its view of every lease. Operations are a few filesystem calls and
// cannot be interrupted once started: ctx is checked between them.
package file
