// Package conformance holds a zerotal lock driver to the driver contract of
// package github.com/zerotal/lock/driver. Every built-in driver runs it,
// and a third-party driver should too: the engine relies on every promise it
// checks.
//
// # Running it
//
// In the driver's test package:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{New: func(t testing.TB) driver.Driver {
//			d := mydriver.Open(...) // a fresh instance on the shared backend under test
//			t.Cleanup(func() { d.Close() })
//			return d
//		}})
//	}
//
// and run it with the race detector: go test -race. Harness.New is called
// several times per subtest. All the instances it returns must share one
// backend (one server, one database file, one lock directory), because the
// kit makes them contend with each other.
//
// If the backend spans OS processes, also set [Harness.ChildEnv] and call
// [Child] first thing in the package's TestMain. The crash test then starts
// a copy of the test binary that takes a lock and kills it with SIGKILL, to
// check that a holder that dies without releasing does not keep its key past
// the TTL. Without ChildEnv, that subtest is skipped and the crash test only
// abandons an instance in-process.
//
// # What it checks
//
// Run runs one named subtest per promise, so a failure names the promise
// broken and says what was expected and what happened:
//
//   - Exists: true exactly for live locks; false for keys never taken,
//     released, force-released or expired.
//   - OwnerGuard: Release by a non-owner is a no-op returning false; a holder
//     whose TTL passed cannot free its successor's lock.
//   - ForceRelease: frees another owner's lock; freeing a free key is no error.
//   - Expiry: held until the TTL, free within TTL + ExpirySlack, down to TTLs
//     of 1ms.
//   - Refresh: Extend, or the same-owner Acquire the engine falls back on
//     without [driver.Extender], keeps a lock past its first TTL; a non-owner
//     can neither extend nor prolong it; Extend never takes a free, released or
//     expired key.
//   - Reacquire: Acquire by the holder's own owner succeeds, resets the TTL,
//     and (with [driver.Fencer]) keeps the token.
//   - KeyIsolation: keys that differ by one byte, by case or by Unicode
//     normalisation, that are prefixes of one another, that look like paths,
//     and keys of [driver.MaxKeyLen] bytes are all distinct locks.
//   - Contention: goroutines on several instances hammer one key; no two
//     ever hold it at once, every holder can release what it took, and the
//     history of calls is checked for linearizability with porcupine.
//   - Fencing ([driver.Fencer]): tokens are never 0 and strictly increase per
//     key across release, expiry, force release, instances, and concurrent
//     acquirers in acquisition order.
//   - Waiter ([driver.Waiter]): first come, first served; cancelled and timed
//     out waiters leave the queue; the key is handed over on release without a
//     polling delay and on the holder's expiry.
//   - Notifier ([driver.Notifier]): a notice follows a release and a force
//     release; cancel is idempotent.
//   - Inspector ([driver.Inspector]): the holder's owner, token, times and pid
//     match the acquisition; a free or expired key is not held.
//   - Crash: a holder that vanishes without releasing frees the key within
//     TTL + ExpirySlack (earlier is fine).
//   - Close: idempotent (a second Close returns nil); afterwards every method
//     returns an error at once and none panics; other instances carry on;
//     a blocked AcquireWait returns.
//   - Engine: through the engine (package lock), what every driver must
//     make possible for it: an Acquire whose ctx is cancelled at any moment
//     leaves the key free or held by that handle, never by an owner nobody
//     knows (an outcome the backend decided after the cancellation must be
//     given back); Block returns at its timeout; Close racing a release that
//     hands the key to the closing manager's waiter leaves the key free;
//     Release after Close does nothing.
//
// Subtests for optional capabilities the driver lacks are skipped with a
// message naming the capability. Run -v to see which ran.
//
// # What it assumes of the driver
//
// Only valid arguments, as the engine would pass them: non-empty UTF-8 keys
// without NUL of at most driver.MaxKeyLen bytes, owners of 32 lowercase hex
// digits, TTLs of at least driver.MinTTL. Each subtest draws its own random
// key prefix, so runs may share a backend with other data and with each
// other; the kit never touches a key outside its prefix and needs no cleanup
// beyond the TTLs (at most a minute) of locks a failed subtest leaves behind.
//
// Timing: the kit measures lock lifetimes on the test's monotonic clock from
// when a call was sent or returned, and only trusts an answer that is
// meaningful for its timing; when a loaded machine makes one inconclusive, it
// retries with a doubled TTL. [Harness.ExpirySlack] is how much later than its
// TTL a backend may let a key go (250ms unless set); raise it for a backend
// that reaps expired keys on a coarse timer, never to hide a TTL rounded to
// seconds. A whole Run takes a few seconds on a fast backend.
//
// Hangs: every driver call takes a context that ends after 30s, and a
// watchdog crashes the test binary, with every goroutine's stack, if a
// subtest is still running 15s after that: a driver that ignores its context
// fails the run instead of hanging it.
package conformance
