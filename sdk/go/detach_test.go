package lock

import (
	"context"
	"testing"
	"time"
)

// A release context's Done costs no timer of its own: contexts whose
// deadlines fall in one tick share a channel, which closes once the
// deadline has passed; Err and Deadline are exact.
func TestReleaseContextsShareTheirDeadlineTimer(t *testing.T) {
	var ticks deadlineTicks
	defer ticks.stop()
	deadline := time.Now().Add(200 * time.Millisecond).Truncate(deadlineTick)
	var first <-chan struct{}
	for i := range 1000 {
		c := detach(context.Background(), deadline.Add(time.Duration(i)*time.Microsecond), &ticks)
		done := c.Done()
		if first == nil {
			first = done
		} else if done != first {
			t.Fatalf("context %d got a channel of its own: a timer per release", i)
		}
		if d, ok := c.Deadline(); !ok || !d.Equal(deadline.Add(time.Duration(i)*time.Microsecond)) {
			t.Fatalf("Deadline = %v, %v", d, ok)
		}
	}
	ticks.mu.Lock()
	pending := len(ticks.ticks)
	ticks.mu.Unlock()
	if pending != 1 {
		t.Fatalf("%d pending timers for 1000 deadlines in one tick; want 1", pending)
	}
	c := detach(context.Background(), deadline, &ticks)
	if c.Err() != nil {
		t.Fatalf("Err before the deadline = %v", c.Err())
	}
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("Done never closed")
	}
	if time.Now().Before(deadline) {
		t.Fatal("Done closed before the deadline")
	}
	if c.Err() != context.DeadlineExceeded {
		t.Fatalf("Err after the deadline = %v", c.Err())
	}
	if late := detach(context.Background(), time.Now().Add(-time.Second), &ticks).Done(); !isClosedChan(late) {
		t.Fatal("Done of a passed deadline is not closed")
	}
}

// Stopping the ticks (a Manager closing) closes every pending channel at
// once and leaves no timer behind.
func TestStoppedTicksLeaveNoTimer(t *testing.T) {
	var ticks deadlineTicks
	done := detach(context.Background(), time.Now().Add(time.Hour), &ticks).Done()
	ticks.stop()
	if !isClosedChan(done) {
		t.Fatal("a pending Done stayed open after stop")
	}
	if len(ticks.ticks) != 0 {
		t.Fatalf("%d timers left after stop", len(ticks.ticks))
	}
	if !isClosedChan(detach(context.Background(), time.Now().Add(time.Hour), &ticks).Done()) {
		t.Fatal("Done after stop made a new timer")
	}
}

func isClosedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
