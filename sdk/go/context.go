package lock

import (
	"context"

	"github.com/zerotal/lock/core"
)

// FromContext returns the lock held by the Try or Block whose fn received
// ctx (or a context derived from it), for its Token, Owner or Key. It
// reports false outside such a function.
func FromContext(ctx context.Context) (*ManagedLock, bool) {
	l, ok := core.FromContext(ctx)
	if !ok {
		return nil, false
	}
	return &ManagedLock{engine: l}, true
}

// runLocked acquires lock by mode and runs fn under it. The engine's context
// for fn already carries the lock, which FromContext finds; a nil fn goes to
// the engine, which rejects it with an error naming the field.
func runLocked(ctx context.Context, lock *core.Lock, mode core.Mode, o core.Options, fn func(context.Context) error) error {
	return lock.Run(ctx, mode, o, fn)
}
