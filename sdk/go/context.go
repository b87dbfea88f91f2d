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
