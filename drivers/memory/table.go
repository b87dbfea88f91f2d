package memory

import (
	"math"
	"sync"
	"time"
)

// Table is one lock table: the backend that every [Driver] handle made from
// it shares. Handles on one table contend with each other; handles on
// different tables never see each other's locks.
//
// A Table needs no closing: it owns no goroutine, and its timers exist only
// while some handle has an AcquireWait call pending. Make one with
// [NewTable]; the zero Table is not usable.
type Table struct {
	// epoch is the origin of every deadline. Deadlines are monotonic offsets
	// from it rather than time.Time values, so comparing them is an integer
	// compare and a wall-clock step cannot move them.
	epoch time.Time

	mu      sync.Mutex
	entries map[string]*entry // held keys, expired ones not yet reaped, and parked
	expiry  expiryHeap        // the held entries, soonest deadline first
	// parked is the entry most recently freed, left in the map so that
	// taking the same key again, the common pattern, costs neither a map
	// delete nor an insert. It is not held: lookups treat it as absent.
	parked *entry
	fence  uint64   // last fencing token handed out
	spare  []*entry // recycled entries, so a reused key costs no allocation
	peak   int      // most entries since the map was last rebuilt
	armed  int      // hand-off timers currently scheduled
}

// entry is one held key, or the parked entry of a key just freed.
type entry struct {
	key      string
	owner    string
	token    uint64
	acquired time.Duration // offset from Table.epoch
	deadline time.Duration // offset from Table.epoch; free from this instant on
	index    int           // position in Table.expiry

	waiters waitQueue
	// timer hands the key to the head waiter at deadline. It is scheduled
	// only while waiters queue, because without waiters an expired entry can
	// wait for the next operation to reap it.
	timer *time.Timer
	armed bool
}

const (
	// maxSpare bounds the recycled entries, so memory still follows the live
	// locks after a burst.
	maxSpare = 64
	// shrinkMin is the size below which the map and heap are never rebuilt:
	// small tables are cheap whatever their history.
	shrinkMin = 1024
	// maxDeadline saturates deadlines so an enormous TTL cannot wrap around
	// into the past.
	maxDeadline = time.Duration(math.MaxInt64)
)

// NewTable returns an empty, private lock table.
func NewTable() *Table {
	return &Table{epoch: time.Now(), entries: make(map[string]*entry)}
}

var sharedTable = sync.OnceValue(NewTable)

// SharedTable returns the process-wide lock table, creating it on first use.
// Every Manager opened with driver "memory" locks in this table.
func SharedTable() *Table { return sharedTable() }

// Driver returns a new handle on t. Closing the handle cancels only its own
// pending waits; the table and its other handles carry on.
func (t *Table) Driver() *Driver { return &Driver{table: t} }

// now is the current instant as an offset from t.epoch, read from the
// monotonic clock.
func (t *Table) now() time.Duration { return time.Since(t.epoch) }

// deadlineAfter returns now+ttl, saturated at maxDeadline.
func deadlineAfter(now, ttl time.Duration) time.Duration {
	if ttl > maxDeadline-now {
		return maxDeadline
	}
	return now + ttl
}

// reap ends every hold whose deadline has passed. Running it at the start of
// every operation is what keeps the rest of the code free of expiry checks:
// afterwards, every entry in the map is live. Its cost is O(log n) per
// expired entry, paid once per entry.
func (t *Table) reap(now time.Duration) {
	for len(t.expiry) > 0 && t.expiry[0].deadline <= now {
		t.vacate(t.expiry[0], now)
	}
}

// lookup returns the holder's entry for key, or nil if the key is free.
func (t *Table) lookup(key string) *entry {
	e := t.entries[key]
	if e == t.parked {
		return nil
	}
	return e
}

// insert records a new hold on a free key. found is what the map holds for
// key: nil, or the parked entry, which is taken back in place.
func (t *Table) insert(found *entry, key, owner string, now, ttl time.Duration) *entry {
	e := found
	switch {
	case e != nil:
		t.parked = nil
	case len(t.spare) > 0:
		n := len(t.spare)
		e = t.spare[n-1]
		t.spare[n-1] = nil
		t.spare = t.spare[:n-1]
		e.key = key
		t.entries[key] = e
	default:
		e = &entry{key: key}
		t.entries[key] = e
	}
	t.fence++
	e.owner, e.token = owner, t.fence
	e.acquired, e.deadline = now, deadlineAfter(now, ttl)
	t.expiry.push(e)
	t.peak = max(t.peak, len(t.entries))
	return e
}

// extend moves the holder's deadline to ttl from now.
func (t *Table) extend(e *entry, now, ttl time.Duration) {
	e.deadline = deadlineAfter(now, ttl)
	t.expiry.fix(e)
	if !e.waiters.empty() {
		t.schedule(e, now)
	}
}

// vacate ends e's current hold. With waiters queued the key passes straight
// to the head waiter, which is what keeps it from ever being free (and so
// open to a barging Acquire) while anyone waits; otherwise the key is
// freed.
func (t *Table) vacate(e *entry, now time.Duration) {
	if e.waiters.empty() {
		t.free(e)
		return
	}
	w := e.waiters.popFront()
	t.fence++
	e.owner, e.token = w.owner, t.fence
	e.acquired, e.deadline = now, deadlineAfter(now, w.ttl)
	t.expiry.fix(e)
	t.schedule(e, now)
	delete(w.handle.waiters, w)
	w.done, w.token = true, e.token
	close(w.ready)
}

// free ends the hold on a key that nobody waits for. The entry is parked in
// place of the one parked before, which leaves the map.
func (t *Table) free(e *entry) {
	t.expiry.remove(e)
	e.owner = ""
	if t.parked != nil {
		t.remove(t.parked)
	}
	t.parked = e
}

// remove deletes a parked entry from the map.
func (t *Table) remove(e *entry) {
	delete(t.entries, e.key)
	if len(t.spare) < maxSpare {
		// Keep the stopped timer: the next key to use this entry reuses it.
		*e = entry{timer: e.timer, index: -1}
		t.spare = append(t.spare, e)
	}
	t.shrink()
}

// shrink rebuilds the map and the heap once they hold under an eighth of
// their peak, because Go maps never give memory back on delete. Each rebuild
// copies at most an eighth of the deletes since the last one, so its cost is
// amortised O(1) per delete.
func (t *Table) shrink() {
	n := len(t.entries)
	if t.peak < shrinkMin || n > t.peak/8 {
		return
	}
	entries := make(map[string]*entry, n)
	for k, e := range t.entries {
		entries[k] = e
	}
	t.entries = entries
	t.expiry = append(expiryHeap(nil), t.expiry...)
	t.peak = n
}

// enqueue queues w on e, which is held by someone else.
func (t *Table) enqueue(e *entry, w *waiter, now time.Duration) {
	w.entry = e
	e.waiters.pushBack(w)
	if w.handle.waiters == nil {
		w.handle.waiters = make(map[*waiter]struct{})
	}
	w.handle.waiters[w] = struct{}{}
	t.schedule(e, now)
}

// dequeue takes a waiter that was neither granted nor cancelled out of its
// queue, leaving the others in order.
func (t *Table) dequeue(w *waiter, now time.Duration) {
	e := w.entry
	e.waiters.remove(w)
	delete(w.handle.waiters, w)
	t.schedule(e, now)
}

// schedule makes e's timer match its state: due at the deadline while
// waiters queue, stopped otherwise.
func (t *Table) schedule(e *entry, now time.Duration) {
	if e.waiters.empty() {
		if e.armed {
			e.timer.Stop()
			e.armed = false
			t.armed--
		}
		return
	}
	wait := e.deadline - now
	if e.timer == nil {
		e.timer = time.AfterFunc(wait, func() { t.timerFired(e) })
	} else {
		e.timer.Reset(wait)
	}
	if !e.armed {
		e.armed = true
		t.armed++
	}
}

// timerFired runs when e's hand-off timer goes off. It does not trust the
// timer to be current: the deadline may have moved, or e may have been
// recycled for another key, while the callback waited for the mutex. So it
// reaps whatever has expired and then re-schedules e from its present state.
func (t *Table) timerFired(e *entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.reap(now)
	if e.armed {
		t.schedule(e, now)
	}
}

// size reports how many keys the table holds, expired ones not yet reaped
// included.
func (t *Table) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parked != nil {
		return len(t.entries) - 1
	}
	return len(t.entries)
}

// Waiting reports how many AcquireWait calls are queued on key (the full key,
// prefix included): the queue depth, for monitoring, and for tests that must
// know a waiter has joined the queue before they release.
func (t *Table) Waiting(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	if e := t.lookup(key); e != nil {
		for w := e.waiters.head; w != nil; w = w.next {
			n++
		}
	}
	return n
}

// armedTimers reports how many hand-off timers are scheduled.
func (t *Table) armedTimers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.armed
}
