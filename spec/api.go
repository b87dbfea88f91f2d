package spec

import (
	"context"
	"time"

	"github.com/zerotal/lock/spec/driver"
)

// Package lists the package-level functions of package lock. Those marked
// //lock:default run on Default(); the others without a directive call the
// hand-written implementation of the same name with a lower-case first
// letter (or the one //lock:impl names).
//
//lock:package
type Package interface {
	// Open returns a Manager on the driver cfg names, with cfg's empty fields
	// set to their defaults. An unknown driver gives an error matching
	// ErrInvalidArgument that names the valid ones; a backend that cannot be
	// opened gives a *DriverError.
	//
	//lock:c zl_open
	Open(cfg Config) (Manager, error)

	// OpenWith is Open with manager options, which apply over cfg: an
	// observer (WithObserver), a logger (WithLogger), or a prefix
	// (WithPrefix, which wins over cfg.Prefix).
	//
	//lock:c - its options are Go values: C opens managers with zl_open
	OpenWith(cfg Config, opts ...ManagerOption) (Manager, error)

	// New returns a Manager on a driver of your own, with the prefix
	// "zerotal_lock:" unless WithPrefix says otherwise. The Manager owns d:
	// its Close closes d.
	//
	//lock:impl newManager
	//lock:c - a driver is a Go value: C opens drivers by name with zl_open
	New(d driver.Driver, opts ...ManagerOption) Manager

	// ConfigFromEnv returns the Config described by the environment, with
	// every unset variable giving its field's default.
	//
	//lock:env Config
	//lock:c - zl_open(NULL, &m) opens a manager from the environment
	ConfigFromEnv() Config

	// Default returns the process-wide Manager used by the package-level
	// Try, Block and Make. It is opened on first use from ConfigFromEnv();
	// if that fails, every call on it returns the error.
	//
	//lock:impl defaultManager
	//lock:c - C has no process-wide manager: open one with zl_open
	Default() Manager

	// SetDefault makes m the Manager returned by Default. SetDefault(nil)
	// makes the next Default() open one from the environment again. The
	// previous default is not closed.
	//
	//lock:c - C has no process-wide manager: open one with zl_open
	SetDefault(m Manager)

	// Try is Default().Try: it runs fn under key if the key is free, and
	// returns a *NotAcquiredError without running fn if it is held.
	//
	//lock:default
	//lock:c - C has no process-wide manager: use zl_try on a manager
	Try(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...Option) error

	// Block is Default().Block: it waits for key to be free, up to the
	// timeout, then runs fn under it.
	//
	//lock:default
	//lock:c - C has no process-wide manager: use zl_block_run on a manager
	Block(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...Option) error

	// Make is Default().Make: it returns a handle on key that is not
	// acquired yet.
	//
	//lock:default
	//lock:c - C has no process-wide manager: use zl_make on a manager
	Make(key string, ttl time.Duration) ManagedLock

	// FromContext returns the lock held by the Try or Block whose fn
	// received ctx (or a context derived from it), for its Token or Key.
	//
	//lock:c - a C callback receives its lock handle as an argument
	FromContext(ctx context.Context) (ManagedLock, bool)

	// CodeOf returns the code of err: CodeOK for nil, the code of the
	// library's error in err's tree, the context's code for the caller's
	// context's error. A backend call cut short by the context is the
	// context's doing, so the context's codes come before a *DriverError's.
	// An error with no code came from outside the library: in practice from
	// the function run under the lock, since every backend failure is wrapped
	// in a *DriverError.
	//
	//lock:codeof
	//lock:c - every C function returns its code
	CodeOf(err error) Code

	// Key builds a canonical key from structured parts: distinct sequences of
	// parts give distinct keys, so ("invoice", 7), ("invoice_7") and
	// ("invoice", "7") are three different locks. Key accepts any values and
	// never panics, and its result is valid UTF-8 without NUL bytes, as keys
	// must be. With no parts it returns "", which Try and the others reject as
	// an empty key.
	//
	// Parts are joined with ':' and encoded by value:
	//
	//   - A string is itself, with '%', ':', ')', control characters and bytes
	//     that are not valid UTF-8 percent-encoded (%3A), and a leading '#'
	//     too; the empty string is #"". So Key("invoice", 7) is "invoice:#7".
	//   - Every other value starts with '#', which no encoded string does.
	//     Integers of any type are #7 or #-7 (int64(7) and uint8(7) are the
	//     same number, so the same part); floats are #f0.5 in their shortest
	//     exact form (#fNaN for every NaN); complex numbers #c(1+2i); booleans
	//     #true and #false; []byte and [N]byte #x0a1b (hex); nil, nil pointers
	//     and nil interfaces #nil.
	//   - A value whose type implements encoding.TextMarshaler (time.Time, a
	//     UUID, netip.Addr) is #t(type:text), with its type's full name
	//     (package path included) and its text encoded as strings.
	//   - Slices, arrays and structs are #(part:part:...) with their elements or
	//     fields in order (a nil slice is an empty one); maps are
	//     #m(key:value:...) sorted by encoded key; pointers and interfaces are
	//     the value they point to.
	//
	// Two kinds of value have no canonical form, and Key says so rather than
	// pretending: functions, channels and unsafe pointers become
	// #func@<address>, #chan@<address> or #unsafe.Pointer@<address>, an
	// identity that means something only inside one process (and is shared by
	// every closure of one function literal); and a value nested more than 32
	// levels deep or made of more than 4096 values, such as a cyclic one,
	// becomes #deep where it crosses the bound (its key is then too long for
	// any driver anyway).
	//
	//lock:impl encodeKey
	//lock:c - its parts are Go values of any type: build keys in the host language
	Key(parts ...any) string
}

// Manager takes locks on one driver under one key prefix. It is safe for
// concurrent use by many goroutines. Make one with Open or New, or use the
// package-level functions, which run on Default().
//
// Every lock has a TTL: if its holder vanishes, the backend frees the key
// once the TTL has passed, so a crash never wedges a key. Each acquisition
// gets a fresh random owner token, and release and refresh are guarded by
// it: a holder whose lock expired can never free or extend the next holder's
// lock.
//
//lock:type
//lock:c zl_manager
type Manager interface {
	// Close stops the refreshers, cancels the context of every fn still
	// running with cause ErrClosed (their Try or Block return an error
	// matching ErrClosed), releases what this manager still holds (best
	// effort: a lock whose release fails expires by its TTL) and closes the
	// driver. Close is idempotent; afterwards every call fails with an error
	// matching ErrClosed.
	//
	//lock:c - zl_close (ABI.Close) also ends the handle, so a second close is detected rather than idempotent
	Close() error

	// Try acquires key once and, if it got it, runs fn under it; if the key
	// is held, Try returns a *NotAcquiredError without running fn.
	//
	// fn's context derives from ctx and carries the lock (FromContext). The
	// lock is released when fn returns, fails or panics (the panic goes on
	// after the release), on a context detached from ctx's cancellation so
	// that a cancelled request still frees its lock. fn's error comes back
	// unchanged for errors.Is and errors.As.
	//
	// Without WithRefresh, the TTL must cover fn: if fn outlives it, its
	// context is cancelled at the client-side expiry and Try returns a
	// *LostError, since the work was not provably exclusive. With
	// WithRefresh, the lock is extended in the background while fn runs, and
	// a *LostError means a refresh found the lock gone or kept failing until
	// the TTL had passed. Try never reports success for work that did not
	// run under the lock.
	//
	//lock:c zl_try
	Try(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...Option) error

	// Block waits for key to be free, up to WithTimeout (default: the TTL),
	// then runs fn under it as Try does. It returns a *NotAcquiredError
	// saying how long it waited when the timeout passes first, and ctx's
	// error when ctx ends first. Waiters wake as soon as the driver can tell
	// them the key is free; polling every WithRetryDelay is only the
	// fallback.
	//
	//lock:c zl_block_run
	Block(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error, opts ...Option) error

	// Make returns a handle on key with the given TTL, for flows that need
	// explicit Acquire and Release. It does not acquire anything; an invalid
	// key or TTL is reported by the handle's methods.
	//
	//lock:impl newLock
	//lock:c zl_make
	Make(key string, ttl time.Duration) ManagedLock
}

// ManagedLock is a handle on one key, made by Make. It can be acquired,
// released and acquired again; each acquisition gets a fresh owner token. It
// is safe for concurrent use: operations that talk to the driver are
// serialised per handle, and the accessors never wait for the driver.
//
//lock:type
//lock:c zl_lock
type ManagedLock interface {
	// Acquire tries once to take the lock and reports whether it did: false
	// with a nil error means the key is held by another owner. If this handle
	// already holds the lock, Acquire resets its TTL (same owner token).
	//
	//lock:c zl_acquire out=acquired
	Acquire(ctx context.Context) (bool, error)

	// Block waits for the lock, up to WithTimeout (default: the TTL). It
	// returns a *NotAcquiredError when the timeout passes first and ctx's
	// error when ctx ends first. Only the timeout and retry delay options
	// apply: a handle is refreshed by calling Refresh.
	//
	//lock:c zl_block options=Timeout,RetryDelay
	Block(ctx context.Context, opts ...Option) error

	// Release frees the lock if this handle still holds it. It is a no-op
	// when the lock is not held, and it never frees another owner's lock,
	// even when this handle's lock has expired and someone else took the
	// key.
	//
	//lock:c zl_release
	Release(ctx context.Context) error

	// ForceRelease frees the key whoever holds it. It is meant for
	// administration and recovery, not for normal flows.
	//
	//lock:c zl_force_release
	ForceRelease(ctx context.Context) error

	// Refresh extends the lock by its TTL if this handle still holds it, and
	// reports whether it did. False means the lock is gone: IsAcquired is
	// false from then on.
	//
	//lock:c zl_refresh out=still_held
	Refresh(ctx context.Context) (bool, error)

	// Key returns the caller's key, without the manager's prefix.
	//
	//lock:c zl_key
	Key() string

	// Owner returns the owner token of the current or most recent
	// acquisition: 32 lowercase hex digits (128 random bits), or "" before
	// the first one.
	//
	//lock:c zl_owner
	Owner() string

	// IsAcquired reports whether this handle holds the lock as far as the
	// client can tell: it was acquired, not released or found lost, and its
	// client-side expiry has not passed. Only the driver knows for sure;
	// Refresh asks it.
	//
	//lock:c zl_is_acquired out=acquired
	IsAcquired() bool

	// ExpiresAt returns the client-side estimate of when the current
	// acquisition expires: the moment its last successful acquire or refresh
	// was sent, plus the TTL. Use it to decide when to refresh, not whether
	// the lock is still held. It is the zero time before the first
	// acquisition.
	//
	//lock:c zl_expires_at out=unix_ms
	ExpiresAt() time.Time

	// Token returns the fencing token of the current acquisition: a number
	// that only increases, per key, over every acquisition. Pass it to the
	// resource you protect, which rejects writes with a token lower than the
	// highest it has seen. It is 0 when the driver mints no tokens.
	//
	//lock:c zl_token out=token
	Token() uint64

	// Holder describes who holds the key now (owner, fencing token, times,
	// process and host, as far as the driver records them), and reports
	// false when the key is free. Drivers that cannot describe holders give
	// an error matching errors.ErrUnsupported.
	//
	//lock:c - driver.Holder has no C form yet
	Holder(ctx context.Context) (driver.Holder, bool, error)
}
