// Package driver is the spec of the driver contract: the interfaces, types and
// constants that lockgen emits as github.com/zerotal/lock/driver
// (driver/driver_gen.go), with these doc comments. The package
// documentation of the driver module stays hand-written in driver/doc.go.
//
// Edit the contract here, then run make generate.
package driver

import (
	"context"
	"time"
)

// MaxKeyLen is the longest key, prefix included, that the engine passes to a
// driver: a caller's key of up to 1 KiB behind a prefix of up to 256 bytes.
const MaxKeyLen = 1024 + 256

// MinTTL is the shortest TTL the engine passes to a driver.
const MinTTL = time.Millisecond

// MaxTTL is the longest TTL the engine passes to a driver: 365 days. Every
// backend and runtime can store it exactly (it is under 2^35 ms, so it fits
// Lua's doubles, JavaScript's numbers and a 32-bit count of seconds), and a
// longer lease is almost always a unit mistake. The engine rejects longer
// TTLs before any driver call, so a driver may convert a TTL to its own unit
// without checking for overflow.
const MaxTTL = 365 * 24 * time.Hour

// Driver is the contract every lock backend implements.
type Driver interface {
	// Acquire takes key for owner for ttl if the key is free or its previous
	// holder's TTL has passed, and reports whether it did. If owner already
	// holds key, Acquire returns true and resets the TTL to ttl from now: that
	// is how the engine refreshes on drivers without Extender.
	Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)

	// Release frees key if, and only if, owner holds it, and reports whether
	// it did. A key held by another owner, expired, or never taken is left
	// alone and gives false.
	Release(ctx context.Context, key, owner string) (bool, error)

	// ForceRelease frees key whoever holds it. Freeing a free key is not an
	// error.
	ForceRelease(ctx context.Context, key string) error

	// Exists reports whether key is held by anyone now. An expired lock is
	// not held.
	Exists(ctx context.Context, key string) (bool, error)

	// Close releases the driver's own resources (connections, timers,
	// goroutines). It does not have to free the locks still held: they
	// expire by their TTL. Close is idempotent; after it, every other method
	// returns an error.
	Close() error
}

// Extender is implemented by drivers that can push a held lock's expiry out
// without the side effects of Acquire.
//
// If a Driver does not implement Extender, the engine refreshes with
// Acquire(key, owner, ttl), which the Driver contract makes an owner-guarded
// TTL reset. The difference matters on backends where Acquire of a lost key
// would take it again: Extend must never take a free key.
type Extender interface {
	// Extend sets key's expiry to ttl from now if owner holds it and its TTL
	// has not passed, and reports whether it did. It never takes a free key
	// and never touches another owner's lock.
	Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)
}

// Fencer is implemented by drivers that mint fencing tokens: numbers that
// only increase, per key, over every acquisition of that key (across release,
// expiry and, as far as the backend can promise it, restarts). A resource
// that remembers the highest token it has seen can reject a late write from a
// holder whose lock expired while it was paused.
//
// If a Driver does not implement Fencer, the engine calls Acquire and the
// lock's token is 0, which means "no fencing".
type Fencer interface {
	// AcquireFenced is Acquire that also returns the acquisition's token.
	// When owner already holds key, the TTL is reset and the token is the one
	// that acquisition was given, unchanged. Tokens are never 0.
	AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (token uint64, ok bool, err error)
}

// Waiter is implemented by drivers that can queue a caller until a key frees
// and hand it over directly, with no polling: the memory driver does it in
// process, the Redis driver with a queue kept on the server, so waiters are
// served in order across processes and hosts.
//
// If a Driver implements Waiter, the engine's Block calls AcquireWait once.
// Otherwise it retries Acquire, woken by [Notifier] when the driver has it and
// by a timer every retry delay in any case.
type Waiter interface {
	// AcquireWait takes key for owner for ttl, waiting as long as ctx allows
	// for the current holder to release it or for its TTL to pass. Waiters on
	// one key are served in the order they called. It returns nil once owner
	// holds key, ctx.Err() (possibly wrapped) when ctx ends first, or another
	// error when the backend fails. The returned token is 0 unless the driver
	// is also a Fencer.
	AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (token uint64, err error)
}

// Notifier is implemented by drivers that can announce that a key may have
// become free: on release, on force release, and where the backend can see it
// on expiry. Notices are a hint: they may be dropped, arrive late, or arrive
// for a key that was taken again at once. The engine always re-checks with
// Acquire and keeps polling at the retry delay as a fallback.
type Notifier interface {
	// Subscribe returns a channel that receives a value (without blocking the
	// driver: the channel is buffered and a full channel drops the notice)
	// when key may have become free, and a function that ends the
	// subscription. The engine subscribes before it tries to acquire, so a
	// release between the try and the wait is not missed. cancel is
	// idempotent and must be called.
	Subscribe(key string) (notices <-chan struct{}, cancel func())
}

// Holder describes the current holder of a key, as far as the driver knows.
// Zero values mean "unknown".
type Holder struct {
	Owner      string    // the owner token of the current acquisition
	Token      uint64    // its fencing token; 0 if the driver has none
	AcquiredAt time.Time // when the current acquisition was taken
	ExpiresAt  time.Time // when it expires unless extended
	PID        int       // the holding process, where the driver records it
	Host       string    // the holding host, where the driver records it
}

// Inspector is implemented by drivers that can describe who holds a key.
// Without it, the engine can only say whether a key is held ([Driver.Exists]).
type Inspector interface {
	// Inspect returns the live holder of key, and false when the key is free
	// (expired locks are free).
	Inspect(ctx context.Context, key string) (h Holder, held bool, err error)
}
