package lock

import "context"

// lockKey is the context key under which fn's context carries its Lock.
type lockKey struct{}

// runContext is fn's context: the cancellable context of the Run, plus the
// Lock, so FromContext works without a context.WithValue on top. Everything
// but the lock is delegated, so cancellation, deadlines and context.Cause
// behave exactly as on the embedded context.
type runContext struct {
	context.Context
	lock *ManagedLock
}

// Value returns the Lock for lockKey and asks the embedded context for
// anything else.
func (c *runContext) Value(key any) any {
	if key == (lockKey{}) {
		return c.lock
	}
	return c.Context.Value(key)
}

// fromContext is FromContext.
func fromContext(ctx context.Context) (*ManagedLock, bool) {
	if ctx == nil {
		return nil, false
	}
	l, ok := ctx.Value(lockKey{}).(*ManagedLock)
	return l, ok
}
