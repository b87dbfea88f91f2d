package spec

import "time"

// Options are the settings of Block and of the background refresher. They
// are given as Option values, one With function per field; a zero field
// means its default, which the engine applies from the lock's TTL.
//
//lock:options Option
//lock:into core.Options
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

// ManagerOptions are the settings of New.
//
//lock:options ManagerOption
type ManagerOptions struct {
	// Prefix is prepended to every key at the driver boundary. Unlike
	// Config.Prefix, WithPrefix("") means no prefix at all.
	Prefix string `default:"zerotal_lock:"`
}

// ManagerOption is one setting of New, made by a With function. The zero
// ManagerOption changes nothing.
type ManagerOption struct{}
