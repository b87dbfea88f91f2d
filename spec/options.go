package spec

import (
	"log/slog"
	"time"
)

// Options are the settings of Block and of the background refresher. They
// are given as Option values, one With function per field; a zero field
// means its default, which the engine applies from the lock's TTL.
//
//lock:options Option
//lock:into options
type Options struct {
	// Timeout is the longest Block waits for the key before it gives up with
	// a *NotAcquiredError. Block waits the whole timeout unless the key frees
	// earlier or ctx ends. A timeout of 0 means a single attempt.
	Timeout time.Duration `default:"ttl" set:"TimeoutSet"`

	// RetryDelay is how often Block tries again when the driver cannot tell
	// it that the key has been freed. Drivers that can tell (the memory
	// driver queues waiters and hands the key over) wake waiters at once.
	RetryDelay time.Duration `default:"100ms"`

	// Refresh extends the lock in the background while fn runs. When a
	// refresh finds the lock gone, or refreshes keep failing until the TTL
	// has passed, fn's context is cancelled with cause ErrLost and Try or
	// Block return a *LostError.
	Refresh bool

	// RefreshEvery is the interval between refreshes. It must be shorter
	// than the TTL.
	RefreshEvery time.Duration `default:"ttl/3" implies:"Refresh"`
}

// Option is one setting of Try, Block and ManagedLock.Block, made by a With
// function. Options are plain values, so passing them allocates nothing. The
// zero Option changes nothing.
type Option struct{}

// ManagerOptions are the settings of New and OpenWith.
//
//lock:options ManagerOption
type ManagerOptions struct {
	// Prefix is prepended to every key at the driver boundary. Unlike
	// Config.Prefix, WithPrefix("") means no prefix at all; given to
	// OpenWith, it overrides Config.Prefix.
	Prefix string `default:"zerotal_lock:"`

	// Observer is told what the manager's locks do (calls, acquisitions and
	// their outcomes, waits, refreshes, losses, releases, backend errors),
	// for metrics and traces; github.com/zerotal/lock/otel adapts it to
	// OpenTelemetry. Each WithObserver adds one, told in the order given. A
	// manager without observers does no work for them.
	Observer Observer `join:"joinObservers"`

	// Logger logs what goes wrong with the manager's locks, with structured
	// fields: a lost lock at Error, a failed refresh and a backend failure at
	// Warn. Nothing is logged without it.
	Logger *slog.Logger
}

// ManagerOption is one setting of New and OpenWith, made by a With function.
// The zero ManagerOption changes nothing.
type ManagerOption struct{}

// Observer is the engine's observation hook: a struct of optional
// functions, one per event, written by hand in the Go API
// (sdk/go/observe.go) because it is Go-only behaviour (functions the engine
// calls), with no C form.
//
//lock:go
type Observer struct{}
