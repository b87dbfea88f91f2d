package lock

import (
	"context"
	"sync"
	"time"
)

// detachedContext is context.WithoutCancel(parent) bounded by a deadline,
// for releases: a request whose ctx was cancelled must still free its lock,
// but a dead backend must not hang it forever.
//
// It differs from context.WithTimeout in what it costs on the hot path: it
// has no timer of its own. Err reads the clock; Done, which a network
// client asks for on every call (go-redis checks it when it takes a pooled
// connection), returns a channel that releases with deadlines in the same
// tick share, closed by one timer per tick (see deadlineTicks). Done thus
// closes up to one tick after the deadline, while Err and Deadline are
// exact.
type detachedContext struct {
	parent   context.Context // for Value only
	deadline time.Time
	ticks    *deadlineTicks
}

func detach(parent context.Context, deadline time.Time, ticks *deadlineTicks) *detachedContext {
	// Values come through WithoutCancel, which hides the parent's
	// cancellation from context.Cause as well as from Done and Err.
	return &detachedContext{parent: context.WithoutCancel(parent), deadline: deadline, ticks: ticks}
}

func (c *detachedContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *detachedContext) Done() <-chan struct{} { return c.ticks.after(c.deadline) }

func (c *detachedContext) Err() error {
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *detachedContext) Value(key any) any { return c.parent.Value(key) }

// deadlineTick is how finely deadlineTicks groups deadlines.
const deadlineTick = 50 * time.Millisecond

// deadlineTicks hands out channels closed at the end of the tick a deadline
// falls in: every deadline of a tick shares one channel and one timer,
// which stops existing once it has fired. Each Manager has one, for its
// releases, and stops it when it closes.
type deadlineTicks struct {
	mu     sync.Mutex
	ticks  map[int64]tick // by the tick's end, in Unix nanoseconds
	closed bool
}

// tick is one pending tick: its channel and the timer that closes it.
type tick struct {
	done  chan struct{}
	timer *time.Timer
}

// closedChan is the Done of a deadline that has passed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// after returns a channel closed once deadline has passed, at most one tick
// late.
func (t *deadlineTicks) after(deadline time.Time) <-chan struct{} {
	now := time.Now()
	if !now.Before(deadline) {
		return closedChan
	}
	end := deadline.Truncate(deadlineTick).Add(deadlineTick).UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	if tk, ok := t.ticks[end]; ok {
		return tk.done
	}
	if t.closed {
		return closedChan // the Manager has closed: nothing waits any more
	}
	if t.ticks == nil {
		t.ticks = make(map[int64]tick)
	}
	done := make(chan struct{})
	timer := time.AfterFunc(time.Until(time.Unix(0, end)), func() {
		t.mu.Lock()
		if _, ok := t.ticks[end]; ok {
			delete(t.ticks, end)
			close(done)
		}
		t.mu.Unlock()
	})
	t.ticks[end] = tick{done, timer}
	return done
}

// stop ends every pending tick now, closing its channel, so that no timer
// outlives the Manager: a release still running then sees its Done closed
// and Err by the clock.
func (t *deadlineTicks) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for end, tk := range t.ticks {
		tk.timer.Stop()
		close(tk.done)
		delete(t.ticks, end)
	}
}
