package core

import (
	"context"
	"sync"
	"time"
)

// detachedContext is context.WithoutCancel(parent) bounded by a deadline,
// for releases: a request whose ctx was cancelled must still free its lock,
// but a dead backend must not hang it forever.
//
// It differs from context.WithTimeout in one way that matters on the hot
// path: no timer exists until somebody asks for Done. An in-process driver
// that only checks Err never pays for one; a network driver that selects on
// Done gets a normal one.
type detachedContext struct {
	parent   context.Context // for Value only
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{}
	timer *time.Timer
}

func detach(parent context.Context, deadline time.Time) *detachedContext {
	// Values come through WithoutCancel, which hides the parent's
	// cancellation from context.Cause as well as from Done and Err.
	return &detachedContext{parent: context.WithoutCancel(parent), deadline: deadline}
}

func (c *detachedContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *detachedContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		done := make(chan struct{})
		c.done = done
		if left := time.Until(c.deadline); left <= 0 {
			close(done)
		} else {
			c.timer = time.AfterFunc(left, func() { close(done) })
		}
	}
	return c.done
}

// Err follows Done once Done exists, so the two never disagree; before that
// nobody can observe Done, and the clock decides.
func (c *detachedContext) Err() error {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done != nil {
		select {
		case <-done:
			return context.DeadlineExceeded
		default:
			return nil
		}
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *detachedContext) Value(key any) any { return c.parent.Value(key) }

// stop releases the timer, if Done made one. A context that outlives its
// call (a driver that kept it) then just never reports its deadline: the
// release it was made for is over.
func (c *detachedContext) stop() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
}
