package memory_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

// ownerSeq makes owner tokens unique across the whole test binary.
var ownerSeq atomic.Uint64

// newOwner returns a fresh owner token in the engine's format: 32 lowercase
// hex digits.
func newOwner() string {
	return fmt.Sprintf("%032x", ownerSeq.Add(1))
}

// newDriver returns a handle on table that is closed when the test ends.
func newDriver(t testing.TB, table *memory.Table) *memory.Driver {
	t.Helper()
	d := table.Driver()
	t.Cleanup(func() { d.Close() })
	return d
}

// eventually polls cond until it holds, failing the test after a generous
// deadline: the machine running the tests may be slow and shared.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// waitResult is what an AcquireWait call running in its own goroutine
// returned.
type waitResult struct {
	token uint64
	err   error
}

// startWait runs AcquireWait in a goroutine and returns once the call is
// queued on key, so that callers control the queue order.
func startWait(ctx context.Context, t *testing.T, table *memory.Table, d *memory.Driver, key, owner string, ttl time.Duration) <-chan waitResult {
	t.Helper()
	before := table.Waiting(key)
	done := make(chan waitResult, 1)
	go func() {
		token, err := d.AcquireWait(ctx, key, owner, ttl)
		done <- waitResult{token, err}
	}()
	eventually(t, "the waiter is queued", func() bool { return table.Waiting(key) == before+1 })
	return done
}

// result receives one waitResult, failing the test if none arrives in time.
func result(t *testing.T, done <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("AcquireWait did not return")
		return waitResult{}
	}
}

// mustAcquire takes key for owner, failing the test if it cannot.
func mustAcquire(t *testing.T, d *memory.Driver, key, owner string, ttl time.Duration) uint64 {
	t.Helper()
	token, ok, err := d.AcquireFenced(context.Background(), key, owner, ttl)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced(%q) = %v, %v; want true, nil", key, ok, err)
	}
	return token
}

// mustRelease frees key held by owner, failing the test if it was not held.
func mustRelease(t *testing.T, d *memory.Driver, key, owner string) {
	t.Helper()
	ok, err := d.Release(context.Background(), key, owner)
	if err != nil || !ok {
		t.Fatalf("Release(%q) = %v, %v; want true, nil", key, ok, err)
	}
}
