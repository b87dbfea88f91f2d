// Package driver defines the contract between the zerotal lock engine and a
// storage backend.
//
// Application code should use package lock (github.com/zerotal/lock/sdk/go);
// this package is for people who write drivers.
//
// A driver implements the five methods of [Driver]. Everything else is
// optional and discovered by type assertion, the way database/sql discovers
// driver.Pinger or driver.SessionResetter: each optional interface below says
// what the engine does when a driver lacks it. A good driver implements
// [Extender]; a driver whose backend can mint fencing tokens implements
// [Fencer]; a driver that can tell when a key frees implements [Waiter] or
// [Notifier], so that blocking callers do not have to poll.
//
// The engine has already validated every argument before a driver sees it:
// keys are non-empty and at most [MaxKeyLen] bytes (the engine's prefix
// included), owners are 32 lowercase hex digits, and TTLs are at least
// [MinTTL]. Drivers never see the caller's key without the prefix.
//
// Errors: a driver returns false (not an error) when a key is held by someone
// else or an owner guard does not match. An error means the backend failed or
// ctx ended; the engine wraps it with the operation and key and never mistakes
// it for contention. Drivers return ctx.Err() (possibly wrapped) when ctx ends.
//
// Every method must be safe for concurrent use by many goroutines, and every
// state change must be atomic at the backend: two Acquire calls for one key,
// from any number of processes or hosts sharing the backend, never both
// succeed while the key is live.
package driver
