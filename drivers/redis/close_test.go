package redis

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A waiter woken by Close leaves the queue, and passes on a key handed to it
// meanwhile, before Close closes the client under it: otherwise the key
// would stay with a waiter that has returned, for the waiter's whole TTL.
func TestCloseLetsWokenWaitersLeave(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	holder := New(rc)
	defer holder.Close()
	d, err := Open(s.url(), noPolls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	key, first, waiter := testKey(t, "close"), newOwner(), newOwner()
	if ok, err := holder.Acquire(ctx, key, first, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, d, key, waiter, time.Minute)
	waitQueuedListening(t, rc, key, 1)

	// The key goes to the waiter without a notice, as when the notice is
	// lost, so only the waiter's leave can give it back.
	lock := redisKeys(key).lock
	if err := rc.Set(ctx, lock, "-"+waiter+"\n5\n0\n1\nhost", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// Scripts wait for the pause to end, so the leave is still running
	// when Close would cut it off; the pause is well inside leaveTimeout.
	if err := rc.Do(ctx, "CLIENT", "PAUSE", 300, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := awaitResult(t, result, handOffBound, "Close"); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("AcquireWait = %d, %v; want ErrClosed", r.token, r.err)
	}
	if h, held, err := holder.Inspect(ctx, key); err != nil || held {
		t.Fatalf("Inspect after Close = %+v, %v, %v; want the waiter's key released by its leave", h, held, err)
	}
}

// Calls whose contexts end while their Driver closes leave nothing running
// after Close: an abandoned shared command is waited for in the background,
// and Close must neither race with that wait starting (run with -race) nor
// return before it ends (goleak, in TestMain).
func TestCloseWhileSharedCallsAreAbandoned(t *testing.T) {
	s := startServer(t)
	for round := range 20 {
		d := New(s.client(t), WithSharedRoundTrips(true))
		key := testKey(t, "abandoned")
		const callers = 8
		started, done := make(chan struct{}, callers), make(chan struct{})
		for i := range callers {
			go func() {
				defer func() { done <- struct{}{} }()
				for j := range 50 {
					// A deadline short enough that some calls end while
					// their command is queued, which abandons it.
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i*j%7)*20*time.Microsecond)
					_, _ = d.Acquire(ctx, key, newOwner(), time.Second)
					cancel()
					if j == 0 {
						started <- struct{}{}
					}
				}
			}()
		}
		for range round % callers { // Close after more and more callers have begun
			<-started
		}
		if err := d.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for range callers {
			<-done
		}
	}
}
