package redis

import (
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
