package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

// callBound is how long a call may take to return after its context ends:
// the attempt in flight is cut by the context, so this is generous.
const callBound = 2 * time.Second

// everyCall returns every Driver method as a call on key, for tests that
// check how all of them behave under a fault.
func everyCall(d *Driver, key, owner string) map[string]func(ctx context.Context) error {
	return map[string]func(ctx context.Context) error{
		"Acquire": func(ctx context.Context) error {
			ok, err := d.Acquire(ctx, key, newOwner(), time.Minute)
			if ok {
				return errors.New("Acquire = true")
			}
			return err
		},
		"AcquireWait": func(ctx context.Context) error {
			_, err := d.AcquireWait(ctx, key, newOwner(), time.Minute)
			return err
		},
		"Release": func(ctx context.Context) error {
			ok, err := d.Release(ctx, key, owner)
			if ok {
				return errors.New("Release = true")
			}
			return err
		},
		"Extend": func(ctx context.Context) error {
			ok, err := d.Extend(ctx, key, owner, time.Minute)
			if ok {
				return errors.New("Extend = true")
			}
			return err
		},
		"ForceRelease": func(ctx context.Context) error { return d.ForceRelease(ctx, key) },
		"Exists":       func(ctx context.Context) error { _, err := d.Exists(ctx, key); return err },
		"Inspect":      func(ctx context.Context) error { _, _, err := d.Inspect(ctx, key); return err },
	}
}

// checkEveryCallFails runs every call under a context of patience and
// checks that each fails with the context's error, promptly.
func checkEveryCallFails(t *testing.T, d *Driver, key, owner string, patience time.Duration, fault string) {
	t.Helper()
	for name, call := range everyCall(d, key, owner) {
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		start := time.Now()
		err := call(ctx)
		elapsed := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with %s = %v; want an error matching context.DeadlineExceeded (an outage is an error, never contention)", name, fault, err)
		}
		if elapsed > patience+callBound {
			t.Errorf("%s with %s returned %v after its %v deadline", name, fault, elapsed-patience, patience)
		}
	}
}

func TestOutageIsAnErrorNotContention(t *testing.T) {
	c := etcdtest.Start(t)
	d := openDriver(t, c.URL())
	key, owner := testKey(t, "outage"), newOwner()
	if ok, err := d.Acquire(t.Context(), key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	c.Members[0].Kill()
	checkEveryCallFails(t, d, key, owner, 500*time.Millisecond, "the server killed")

	// The server keeps the lock on disk: back up, it is still held.
	c.Members[0].Restart(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release after the restart = %v, %v; want true: the lock survives a restart", ok, err)
	}
}

func TestHungServerCallsEndWithTheirContext(t *testing.T) {
	c := etcdtest.Start(t)
	d := openDriver(t, c.URL())
	key, owner := testKey(t, "hung"), newOwner()
	if ok, err := d.Acquire(t.Context(), key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// SIGSTOP: the server keeps its connections open and answers nothing,
	// as a hung process or a partitioned host does.
	c.Members[0].Pause()
	defer c.Members[0].Resume()
	checkEveryCallFails(t, d, key, owner, 300*time.Millisecond, "the server hung")

	// Close does not wait on the hung server beyond its bounds.
	waiting := make(chan error, 1)
	go func() {
		_, err := d.AcquireWait(t.Context(), key, newOwner(), time.Minute)
		waiting <- err
	}()
	start := time.Now()
	if err := d.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 3*DefaultOpTimeout+closeSlack {
		t.Errorf("Close with the server hung took %v", elapsed)
	}
	select {
	case err := <-waiting:
		if err == nil {
			t.Error("AcquireWait returned nil after Close with the server hung; want an error")
		}
	case <-time.After(callBound):
		t.Error("AcquireWait still blocked after Close returned")
	}
}

func TestRestartKeepsLocksAndTokens(t *testing.T) {
	c := etcdtest.Start(t)
	d := openDriver(t, c.URL())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	key, owner := testKey(t, "restart"), newOwner()
	token, ok, err := d.AcquireFenced(ctx, key, owner, 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	c.Members[0].Kill()
	c.Members[0].Restart(t)
	h, held, err := d.Inspect(ctx, key)
	if err != nil || !held || h.Owner != owner || h.Token != token {
		t.Fatalf("Inspect after a restart = %+v, %v, %v; want owner %s, token %d", h, held, err, owner, token)
	}
	if ok, err := d.Extend(ctx, key, owner, 30*time.Second); err != nil || !ok {
		t.Fatalf("Extend after a restart = %v, %v; want true", ok, err)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release after a restart = %v, %v; want true", ok, err)
	}
	next, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || !ok || next <= token {
		t.Fatalf("AcquireFenced after the restart = %d, %v, %v; want a token above %d", next, ok, err, token)
	}
}
