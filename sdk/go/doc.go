// Package lock provides distributed locks: mutual exclusion across
// goroutines, processes and hosts, with owner-guarded release, TTL expiry,
// background refresh, honest lock-lost reporting and fencing tokens.
//
// # Taking a lock
//
// [Try] acquires a key once and runs a function under it; if another owner
// holds the key, it returns a *[NotAcquiredError] without running the
// function:
//
//	err := lock.Try(ctx, lock.Key("invoice", id), 30*time.Second, func(ctx context.Context) error {
//		return processInvoice(ctx, id)
//	})
//	if errors.Is(err, lock.ErrNotAcquired) {
//		// someone else is processing this invoice
//	}
//
// [Block] waits for the key instead, up to [WithTimeout] (by default the
// TTL). Waiters wake as soon as the driver can tell them the key is free;
// polling every [WithRetryDelay] is only the fallback. [Make] returns a
// [ManagedLock] handle for flows that need explicit Acquire and Release.
//
// The package-level functions run on [Default], a [Manager] opened on first
// use from the environment ([ConfigFromEnv]). Open a Manager of your own
// with [Open] and a [Config], or with [New] and any driver.
//
// # TTL and owner tokens
//
// Every lock has a TTL: if its holder crashes, the backend frees the key
// once the TTL has passed, so a key is never wedged. Every acquisition gets
// a fresh 128-bit random owner token, and release and refresh only act when
// the caller's token still holds the key: a holder whose lock expired, and
// was taken by someone else, can never free or extend the new holder's lock.
// Try and Block release the lock when the function returns, fails or panics,
// on a context detached from the caller's cancellation, so that a cancelled
// request still frees its lock.
//
// # Refresh and lock lost
//
// Without refresh, the TTL must cover the work. With [WithRefresh], the lock
// is extended in the background every [WithRefreshEvery] (by default a
// third of the TTL) while the function runs, and the TTL only says how long
// after a crash someone else may take over.
//
// A lock can still be lost: a refresh finds it gone, refreshes keep failing
// until the TTL has passed, or (without refresh) the function outlives the
// TTL. Then the function's context is cancelled, and Try or Block return a
// *[LostError], even if the function then returns nil: work that did not
// provably run under the lock is never reported as success. The
// cancellation is a request: work that can do damage after losing
// exclusivity must check its context between steps. [ManagedLock.Token]
// gives the acquisition's fencing token, which the protected resource can
// use to reject a late writer.
//
// # Errors
//
// Every error of the package has a stable [Code] ([CodeOf]) and an HTTP
// status ([Code.HTTPStatus]); the numbers are shared with the C ABI.
// Contention is [ErrNotAcquired] (409), a lost lock [ErrLost], bad input
// [ErrInvalidArgument] (an *[InvalidArgumentError] naming the field, returned
// before any backend call), a closed manager [ErrClosed], the caller's
// context its own error, and a backend failure a *[DriverError] with the
// operation and key, which never matches ErrNotAcquired. The function's own
// error comes back unchanged.
//
// # Drivers
//
// [Config.Driver] chooses the backend: "memory" (one lock table per process,
// shared by every Manager of the process; FIFO hand-off to waiters),
// "sqlite" (the processes of one host, through a database file), "redis"
// (across hosts) or "file" (the processes sharing a lock directory). Any
// type implementing [driver.Driver] works with [New]; the conformance kit
// (github.com/zerotal/lock/conformance) holds a driver to the contract.
//
// This package is generated from the spec in spec/ by lockgen, except for
// the glue in open.go, default.go, context.go and key.go.
package lock
