package file

import (
	"sync"
	"sync/atomic"
)

// Release notices travel only inside this process: between every Driver open
// on the same lock directory here. Another process's release is not seen; the
// engine's polling covers it, as the Notifier contract allows.

// topic names the keys of one lock directory: its path with symlinks
// resolved, so two Open calls that spell the directory differently share
// notices.
type topic struct{ dir, key string }

// subscription is one Subscribe call.
type subscription struct {
	t      topic
	d      *Driver
	ch     chan struct{}
	cancel sync.Once
}

// board is the process-wide table of subscriptions.
var board = struct {
	mu    sync.Mutex
	subs  map[topic]map[*subscription]struct{}
	count atomic.Int64 // lets notify skip the lock when nobody listens
}{subs: make(map[topic]map[*subscription]struct{})}

// Subscribe implements driver.Notifier. Notices come from Release and
// ForceRelease through any Driver of this process open on the same
// directory; expiry and other processes' releases are left to the engine's
// polling. After Close it returns a channel that never receives.
func (d *Driver) Subscribe(key string) (notices <-chan struct{}, cancel func()) {
	s := &subscription{t: topic{d.topic, key}, d: d, ch: make(chan struct{}, 1)}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return s.ch, func() {}
	}
	d.subs[s] = struct{}{}
	board.mu.Lock()
	set := board.subs[s.t]
	if set == nil {
		set = make(map[*subscription]struct{})
		board.subs[s.t] = set
	}
	set[s] = struct{}{}
	board.count.Add(1)
	board.mu.Unlock()
	return s.ch, func() { s.end(true) }
}

// end removes s from the board and, when forget is set, from its driver's
// set (Close empties that set itself).
func (s *subscription) end(forget bool) {
	s.cancel.Do(func() {
		if forget {
			s.d.mu.Lock()
			delete(s.d.subs, s)
			s.d.mu.Unlock()
		}
		board.mu.Lock()
		if set := board.subs[s.t]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(board.subs, s.t)
			}
		}
		board.count.Add(-1)
		board.mu.Unlock()
	})
}

// notify tells every subscriber of key in directory dir that it may be free.
// A full channel already holds a notice, so dropping this one loses nothing.
func notify(dir, key string) {
	if board.count.Load() == 0 {
		return
	}
	board.mu.Lock()
	defer board.mu.Unlock()
	for s := range board.subs[topic{dir, key}] {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}
