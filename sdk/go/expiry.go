package lock

import (
	"context"
	"sync"
	"time"
)

// expiryQueue cancels running work when its lock's client-side expiry
// passes. One runtime timer serves every Run of a Manager, armed for the
// earliest expiry: the common case — a Run that starts and ends well before
// its TTL — costs a heap push and a heap remove, not a timer of its own.
type expiryQueue struct {
	mu      sync.Mutex
	heap    []*ManagedLock // min-heap by Lock.runExpires; Lock.runIndex is the position
	timer   *time.Timer    // fires at armedAt, calling fire
	armedAt time.Time      // zero when the timer is not armed
	closed  bool
}

// add schedules l's Run, which cancel cancels, to expire at at.
func (q *expiryQueue) add(l *ManagedLock, at time.Time, cancel context.CancelCauseFunc) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l.runExpires, l.runCancel = at, cancel
	l.runIndex = int32(len(q.heap))
	q.heap = append(q.heap, l)
	q.up(int(l.runIndex))
	q.arm()
}

// update moves l's expiry to at, after a refresh.
func (q *expiryQueue) update(l *ManagedLock, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l.runIndex < 0 {
		return // already fired or removed
	}
	l.runExpires = at
	if i := int(l.runIndex); !q.down(i) {
		q.up(i)
	}
	q.arm()
}

// remove unschedules l, whose Run has ended. The timer stays as it is: a
// stale firing finds nothing due and re-arms for whatever is left.
func (q *expiryQueue) remove(l *ManagedLock) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := int(l.runIndex)
	if i < 0 {
		return
	}
	last := len(q.heap) - 1
	if i != last {
		q.swap(i, last)
	}
	q.heap[last] = nil
	q.heap = q.heap[:last]
	if i != last && !q.down(i) {
		q.up(i)
	}
	l.runIndex, l.runCancel = -1, nil
}

// arm makes sure the timer fires no later than the earliest expiry. The
// caller holds q.mu.
func (q *expiryQueue) arm() {
	if q.closed || len(q.heap) == 0 {
		return
	}
	at := q.heap[0].runExpires
	if !q.armedAt.IsZero() && !at.Before(q.armedAt) {
		return
	}
	q.armedAt = at
	if q.timer == nil {
		q.timer = time.AfterFunc(time.Until(at), q.fire)
	} else {
		q.timer.Reset(time.Until(at))
	}
}

// fire cancels every Run whose expiry has passed and re-arms for the rest.
func (q *expiryQueue) fire() {
	q.mu.Lock()
	q.armedAt = time.Time{}
	now := time.Now()
	var due []context.CancelCauseFunc
	var why []expired
	for len(q.heap) > 0 && !now.Before(q.heap[0].runExpires) {
		l := q.heap[0]
		last := len(q.heap) - 1
		q.swap(0, last)
		q.heap[last] = nil
		q.heap = q.heap[:last]
		q.down(0)
		l.runIndex = -1
		// Take the cancel func now, under q.mu: once q.mu is released the
		// Run may end and the handle start another one.
		due = append(due, l.runCancel)
		why = append(why, expired{l, l.expiredError()}) // l.mu nests inside q.mu, never the other way
		l.runCancel = nil
	}
	q.arm()
	q.mu.Unlock()
	for i, cancel := range due {
		l := why[i].l
		l.m.obs.lostInRun(l, why[i].lost)
		cancel(why[i].lost)
	}
}

// expired is a Run whose expiry has passed, and its loss.
type expired struct {
	l    *ManagedLock
	lost *LostError
}

// close stops the timer for good.
func (q *expiryQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.timer != nil {
		q.timer.Stop()
	}
}

func (q *expiryQueue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.heap[i].runIndex = int32(i)
	q.heap[j].runIndex = int32(j)
}

func (q *expiryQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.heap[i].runExpires.Before(q.heap[p].runExpires) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

// down sifts i towards the leaves and reports whether it moved.
func (q *expiryQueue) down(i int) bool {
	start := i
	n := len(q.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && q.heap[r].runExpires.Before(q.heap[c].runExpires) {
			c = r
		}
		if !q.heap[c].runExpires.Before(q.heap[i].runExpires) {
			break
		}
		q.swap(i, c)
		i = c
	}
	return i > start
}
