package core

import "context"

// lockKey is the context key under which fn's context carries its Lock.
type lockKey struct{}

// runContext is fn's context: the cancellable context of the Run, plus the
// Lock, so FromContext works without a context.WithValue on top. Everything
// but the lock is delegated, so cancellation, deadlines and context.Cause
// behave exactly as on the embedded context.
type runContext struct {
	context.Context
	lock *Lock
}

// Value returns the Lock for lockKey and asks the embedded context for
// anything else.
func (c *runContext) Value(key any) any {
	if key == (lockKey{}) {
		return c.lock
	}
	return c.Context.Value(key)
}

// FromContext returns the Lock whose Run gave fn ctx (or a context derived
// from it), and false outside such a function.
func FromContext(ctx context.Context) (*Lock, bool) {
	if ctx == nil {
		return nil, false
	}
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}
