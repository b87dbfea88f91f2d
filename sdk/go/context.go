package lock

import (
	"context"

	"github.com/zerotal/lock/core"
)

// ctxKey is the context key of the lock a Try or Block holds while fn runs.
type ctxKey struct{}

// FromContext returns the lock held by the Try or Block whose fn received
// ctx (or a context derived from it), for its Token, Owner or Key. It
// reports false outside such a function.
func FromContext(ctx context.Context) (*ManagedLock, bool) {
	if ctx == nil {
		return nil, false
	}
	l, ok := ctx.Value(ctxKey{}).(*ManagedLock)
	return l, ok
}

// lockContext is fn's context: the engine's, plus the lock for
// FromContext. The lock lives inside the context so that Try pays one
// allocation for both, where context.WithValue and a separate ManagedLock
// would cost two; everything but the lock's key is delegated to the
// engine's context, so cancellation and context.Cause work as they do
// there.
type lockContext struct {
	context.Context
	lock ManagedLock
}

// Value returns the lock for ctxKey, and asks the engine's context for
// anything else.
func (c *lockContext) Value(key any) any {
	if key == (ctxKey{}) {
		return &c.lock
	}
	return c.Context.Value(key)
}

// runLocked acquires lock by mode and runs fn under it, with a context
// that carries the lock for FromContext. A nil fn goes to the engine as
// nil, which rejects it with an error naming the field.
func runLocked(ctx context.Context, lock *core.Lock, mode core.Mode, o core.Options, fn func(context.Context) error) error {
	if fn == nil {
		return lock.Run(ctx, mode, o, nil)
	}
	return lock.Run(ctx, mode, o, func(c context.Context) error {
		return fn(&lockContext{Context: c, lock: ManagedLock{engine: lock}})
	})
}
