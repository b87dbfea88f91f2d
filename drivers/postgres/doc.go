// Package postgres is the zerotal lock driver for PostgreSQL: it
// coordinates goroutines, processes and hosts that share one PostgreSQL
// database, through github.com/jackc/pgx/v5.
//
// Open a driver from a URL, or wrap a pgxpool.Pool the application already
// has with [New]:
//
//	d, err := postgres.Open("postgres://app:secret@db.internal:5432/app?lock_table=zerotal_lock.locks")
//
// # Operations
//
// Locks are rows of a lease table, created with its schema on the first
// call (see [WithTable]), under an advisory transaction lock so that
// processes starting together do not collide. Expiry is judged by the
// server's clock: a row is held while clock_timestamp() is before its
// expires_at, and no client clock is ever compared with it.
//
// Every operation is one statement, one round trip. Acquire and Release
// first try their common case in plain SQL (an UPDATE of the key's row:
// take a free key nobody queues for, or free a key nobody waits for), and
// the same statement falls back to a PL/pgSQL function created with the
// table for every other case (a key never used, a holder refreshing, a
// queue to serve). Extend, Exists and Inspect are plain statements. A
// contended Acquire writes nothing, so polling a held key costs no commit.
//
// # Fencing tokens
//
// A token is max(the key's last token + 1, the server's clock in µs),
// computed while the statement holds the key's row lock. Rows are kept
// after a release (marked free by an expiry of now) and never deleted by
// the driver, because the row is what carries the last token: with the
// row, tokens of a key increase in the order their acquisitions commit,
// across release, expiry, force release, hand-off and restarts (the table
// is logged and the driver's sessions commit with synchronous_commit on). A
// design that deletes rows must draw the next token elsewhere, from a
// sequence or the clock, before the row is written: an acquirer that drew
// its value and then waited behind another could commit a smaller token
// after a larger one, and a clock stepped back would repeat tokens. The
// clock half covers what the row cannot: a failover to an asynchronous
// replica that had not received the last acquisitions. What tokens rely
// on there: the new primary's clock is not behind the last token issued.
//
// # Waiting in line
//
// The Driver is a driver.Waiter: a blocking acquire waits in a first come,
// first served queue kept in a second table, "<table>_waiters", so waiters
// in every process share one line. An attempt that finds the key held puts
// its owner at the back of the queue and marks the key's row queued, so
// that its release looks at the queue. The release then hands the key over
// in the same statement: it writes the row for the first live waiter, with
// that waiter's TTL and a new token, and runs pg_notify on the channel of
// that waiter's Driver, which the server delivers when the release commits.
// Each Driver LISTENs on a channel of its own on one dedicated connection
// (opened when a waiter first queues, reconnected with backoff after a
// failure), so a hand-off wakes exactly one waiter and costs it no round
// trip. A plain Acquire of a free key that waiters queue for hands it to
// the first of them and reports contention: nobody barges past the queue.
//
// Nothing announces an expiry, so the first waiter in line also polls when
// the holder's TTL ends (its queued attempt returns the remaining TTL), and
// every waiter polls every [WithWaitPoll] interval in case a notice was
// lost; when the listening session is lost or replaced, every waiter polls
// at once. A waiter whose ctx ends, or whose Driver closes, leaves the
// queue in the background and passes on a key handed to it meanwhile;
// Close waits for that, within bounds. A waiter that dies is skipped: at the
// next hand-off when its listening session is gone (a killed process's
// connections close), and once it has missed 4 polls otherwise (a frozen
// process's connections stay open). A waiter whose liveness only its
// deadline vouches for (it queued before its Driver listened) is handed the
// key until that deadline, and its next poll makes it last its TTL.
//
// A statement cut short by its ctx still runs on the server (pgx drops the
// connection; the backend notices only after its commit). What an acquire
// or a queued attempt so cut short may have taken is given back in the
// background once the backend that ran it has exited, never before.
//
// # Guarantees and failures
//
// Mutual exclusion holds on one PostgreSQL primary, for as long as it keeps
// its committed data: a restart or a crash of the server keeps every lock
// (a TTL that ran out meanwhile has freed its key), and killing the
// driver's sessions (pg_terminate_backend, a pooler, a network cut) frees
// nothing, since a lock is a row, not session state. A holder that dies
// keeps its locks until their TTL passes; nothing else frees them. After a
// failover to an asynchronous replica, locks committed on the old primary
// but not replicated are lost and two holders can coexist until the TTL:
// fencing tokens, checked by the protected resource, are the way to stay
// correct through that. A backend failure is always an error, never a
// false.
package postgres
