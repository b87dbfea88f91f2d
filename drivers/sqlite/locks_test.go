package sqlite

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAcquireExcludesOtherOwners(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		a, b := newOwner(t), newOwner(t)
		mustAcquire(t, d, "k", a, time.Minute)
		if ok, err := d.Acquire(ctx, "k", b, time.Minute); ok || err != nil {
			t.Fatalf("second owner Acquire = %v, %v; want false, nil", ok, err)
		}
		if ok, err := d.Release(ctx, "k", b); ok || err != nil {
			t.Fatalf("Release by non-holder = %v, %v; want false, nil", ok, err)
		}
		if ok, err := d.Exists(ctx, "k"); !ok || err != nil {
			t.Fatalf("Exists after failed foreign release = %v, %v; want true", ok, err)
		}
		if ok, err := d.Release(ctx, "k", a); !ok || err != nil {
			t.Fatalf("Release by holder = %v, %v; want true, nil", ok, err)
		}
		if ok, err := d.Release(ctx, "k", a); ok || err != nil {
			t.Fatalf("second Release = %v, %v; want false, nil", ok, err)
		}
		if ok, err := d.Exists(ctx, "k"); ok || err != nil {
			t.Fatalf("Exists after release = %v, %v; want false", ok, err)
		}
		mustAcquire(t, d, "k", b, time.Minute)
	})
}

func TestKeysAreIndependent(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		a, b := newOwner(t), newOwner(t)
		mustAcquire(t, d, "k1", a, time.Minute)
		mustAcquire(t, d, "k2", b, time.Minute)
		if ok, err := d.Release(testContext(t), "k1", b); ok || err != nil {
			t.Fatalf("Release(k1) by k2's owner = %v, %v; want false", ok, err)
		}
	})
}

func TestReacquireBySameOwnerResetsTTLAndKeepsToken(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		owner := newOwner(t)
		first := mustAcquire(t, d, "k", owner, 2*time.Second) // still held at the re-acquire, on a loaded machine
		h1, _, err := d.Inspect(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		again := mustAcquire(t, d, "k", owner, time.Hour)
		if again != first {
			t.Fatalf("re-acquire token = %d; want the unchanged %d", again, first)
		}
		h2, held, err := d.Inspect(ctx, "k")
		if err != nil || !held {
			t.Fatalf("Inspect = %v, %v", held, err)
		}
		if h2.ExpiresAt.Before(before.Add(time.Hour)) {
			t.Fatalf("expiry after re-acquire = %v; want at least %v", h2.ExpiresAt, before.Add(time.Hour))
		}
		if !h2.AcquiredAt.Equal(h1.AcquiredAt) {
			t.Fatalf("acquired at changed from %v to %v on a refresh", h1.AcquiredAt, h2.AcquiredAt)
		}
	})
}

func TestTokensIncreaseAcrossReleaseExpiryAndForceRelease(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		var last uint64
		next := func(step string, token uint64) {
			t.Helper()
			if token == 0 || token <= last {
				t.Fatalf("%s: token %d after %d; want a larger non-zero token", step, token, last)
			}
			last = token
		}
		a := newOwner(t)
		next("first", mustAcquire(t, d, "k", a, time.Minute))
		if ok, err := d.Release(ctx, "k", a); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		b := newOwner(t)
		next("after release", mustAcquire(t, d, "k", b, 5*time.Millisecond))
		c := newOwner(t)
		var token uint64
		if !eventually(5*time.Second, func() bool {
			tok, ok, err := d.AcquireFenced(ctx, "k", c, time.Minute)
			token = tok
			return ok && err == nil
		}) {
			t.Fatal("expired lock was never taken over")
		}
		next("after expiry", token)
		if err := d.ForceRelease(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		next("after force release", mustAcquire(t, d, "k", newOwner(t), time.Minute))
	})
}

func TestTokensSurviveReopen(t *testing.T) {
	d, path := openFile(t)
	ctx := testContext(t)
	owner := newOwner(t)
	first := mustAcquire(t, d, "k", owner, time.Minute)
	if ok, err := d.Release(ctx, "k", owner); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openPath(t, path)
	if second := mustAcquire(t, reopened, "k", newOwner(t), time.Minute); second <= first {
		t.Fatalf("token after reopen = %d; want more than %d", second, first)
	}
}

func TestMillisecondTTL(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		const ttl = 5 * time.Millisecond
		start := time.Now()
		mustAcquire(t, d, "k", newOwner(t), ttl)
		other := newOwner(t)
		var took time.Duration
		if !eventually(5*time.Second, func() bool {
			ok, err := d.Acquire(ctx, "k", other, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			took = time.Since(start)
			return ok
		}) {
			t.Fatalf("a %v lock was still held after 5s", ttl)
		}
		if took < ttl {
			t.Fatalf("another owner took the lock after %v, before its %v TTL", took, ttl)
		}
	})
}

func TestExpiredLockIsFree(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		owner := newOwner(t)
		const ttl = 20 * time.Millisecond
		start := time.Now()
		mustAcquire(t, d, "k", owner, ttl)
		if !eventually(5*time.Second, func() bool {
			held, err := d.Exists(ctx, "k")
			return err == nil && !held
		}) {
			t.Fatal("Exists still true long after the TTL")
		}
		if since := time.Since(start); since < ttl {
			t.Fatalf("lock reported free after %v, before its TTL %v", since, ttl)
		}
		if _, held, err := d.Inspect(ctx, "k"); held || err != nil {
			t.Fatalf("Inspect of expired lock = %v, %v; want not held", held, err)
		}
		if ok, err := d.Release(ctx, "k", owner); ok || err != nil {
			t.Fatalf("Release of expired lock = %v, %v; want false", ok, err)
		}
		if ok, err := d.Extend(ctx, "k", owner, time.Minute); ok || err != nil {
			t.Fatalf("Extend of expired lock = %v, %v; want false", ok, err)
		}
	})
}

func TestExtend(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		owner, other := newOwner(t), newOwner(t)
		if ok, err := d.Extend(ctx, "k", owner, time.Minute); ok || err != nil {
			t.Fatalf("Extend of a never-taken key = %v, %v; want false", ok, err)
		}
		if held, _ := d.Exists(ctx, "k"); held {
			t.Fatal("Extend took a free key")
		}
		token := mustAcquire(t, d, "k", owner, time.Minute)
		if ok, err := d.Extend(ctx, "k", other, time.Hour); ok || err != nil {
			t.Fatalf("Extend by another owner = %v, %v; want false", ok, err)
		}
		before := time.Now()
		if ok, err := d.Extend(ctx, "k", owner, time.Hour); !ok || err != nil {
			t.Fatalf("Extend by holder = %v, %v; want true", ok, err)
		}
		h, held, err := d.Inspect(ctx, "k")
		if err != nil || !held {
			t.Fatalf("Inspect = %v, %v", held, err)
		}
		if h.ExpiresAt.Before(before.Add(time.Hour)) || h.Token != token {
			t.Fatalf("after Extend: expires %v, token %d; want >= %v and %d", h.ExpiresAt, h.Token, before.Add(time.Hour), token)
		}
		if ok, err := d.Release(ctx, "k", owner); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if ok, err := d.Extend(ctx, "k", owner, time.Minute); ok || err != nil {
			t.Fatalf("Extend after release = %v, %v; want false", ok, err)
		}
	})
}

func TestForceRelease(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		if err := d.ForceRelease(ctx, "never"); err != nil {
			t.Fatalf("ForceRelease of a free key: %v", err)
		}
		owner := newOwner(t)
		mustAcquire(t, d, "k", owner, time.Minute)
		notices, cancel := d.Subscribe("k")
		defer cancel()
		if err := d.ForceRelease(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if held, err := d.Exists(ctx, "k"); held || err != nil {
			t.Fatalf("Exists after ForceRelease = %v, %v", held, err)
		}
		select {
		case <-notices:
		default:
			t.Fatal("ForceRelease sent no notice")
		}
		if ok, err := d.Release(ctx, "k", owner); ok || err != nil {
			t.Fatalf("Release by the evicted owner = %v, %v; want false", ok, err)
		}
	})
}

func TestInspect(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		if _, held, err := d.Inspect(ctx, "k"); held || err != nil {
			t.Fatalf("Inspect of a free key = %v, %v", held, err)
		}
		owner := newOwner(t)
		before := time.Now()
		token := mustAcquire(t, d, "k", owner, time.Minute)
		after := time.Now()
		h, held, err := d.Inspect(ctx, "k")
		if err != nil || !held {
			t.Fatalf("Inspect = %v, %v", held, err)
		}
		host, _ := os.Hostname()
		if h.Owner != owner || h.Token != token || h.PID != os.Getpid() || h.Host != host {
			t.Fatalf("holder = %+v; want owner %s, token %d, pid %d, host %q", h, owner, token, os.Getpid(), host)
		}
		if h.AcquiredAt.Before(before) || h.AcquiredAt.After(after) {
			t.Fatalf("acquired at %v; want between %v and %v", h.AcquiredAt, before, after)
		}
		if got := h.ExpiresAt.Sub(h.AcquiredAt); got != time.Minute {
			t.Fatalf("expires - acquired = %v; want the TTL, 1m", got)
		}
		if ok, err := d.Release(ctx, "k", owner); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if _, held, err := d.Inspect(ctx, "k"); held || err != nil {
			t.Fatalf("Inspect after release = %v, %v", held, err)
		}
	})
}

func TestHugeTTLSaturates(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		owner := newOwner(t)
		mustAcquire(t, d, "k", owner, time.Duration(1<<63-1))
		if held, err := d.Exists(testContext(t), "k"); !held || err != nil {
			t.Fatalf("Exists = %v, %v; want held", held, err)
		}
		if ok, err := d.Extend(testContext(t), "k", owner, time.Duration(1<<63-1)); !ok || err != nil {
			t.Fatalf("Extend with a huge TTL = %v, %v; want true", ok, err)
		}
		if held, err := d.Exists(testContext(t), "k"); !held || err != nil {
			t.Fatalf("Exists after a huge Extend = %v, %v; want held (a wrapped expiry would be in the past)", held, err)
		}
	})
}

// A call that waits for the Driver's one connection while its lease runs out
// must judge the lease by the time its statement runs, not the time it was
// called: Release and Extend of a lease that lapsed in the queue return false.
func TestLeaseLapsedWhileQueuedIsNotReleasedOrExtended(t *testing.T) {
	ops := map[string]func(d *Driver, ctx context.Context, owner string) (bool, error){
		"Release": func(d *Driver, ctx context.Context, owner string) (bool, error) {
			return d.Release(ctx, "k", owner)
		},
		"Extend": func(d *Driver, ctx context.Context, owner string) (bool, error) {
			return d.Extend(ctx, "k", owner, time.Minute)
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			backends(t, func(t *testing.T, d *Driver) {
				ctx := testContext(t)
				owner := newOwner(t)
				const ttl = 100 * time.Millisecond
				mustAcquire(t, d, "k", owner, ttl)
				// Occupy the only connection so that op queues in database/sql.
				conn, err := d.db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				timer := time.AfterFunc(3*ttl, func() { _ = conn.Close() })
				defer timer.Stop()
				if ok, err := op(d, ctx, owner); ok || err != nil {
					t.Fatalf("%s of a lease that lapsed while the call was queued = %v, %v; want false", name, ok, err)
				}
				if held, err := d.Exists(ctx, "k"); held || err != nil {
					t.Fatalf("Exists = %v, %v; want free", held, err)
				}
			})
		})
	}
}

func TestUnusualKeys(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		keys := []string{"a'b", `"; DROP TABLE zerotal_lock; --`, "ключ", "x\ty", strings.Repeat("k", 1024)}
		for _, k := range keys {
			owner := newOwner(t)
			mustAcquire(t, d, k, owner, time.Minute)
			if ok, err := d.Release(testContext(t), k, owner); !ok || err != nil {
				t.Fatalf("Release(%q) = %v, %v", k, ok, err)
			}
		}
	})
}

func TestCancelledContext(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		owner := newOwner(t)
		if _, err := d.Acquire(ctx, "k", owner, time.Minute); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire with cancelled ctx: %v; want context.Canceled", err)
		}
		if _, err := d.Release(ctx, "k", owner); !errors.Is(err, context.Canceled) {
			t.Fatalf("Release with cancelled ctx: %v; want context.Canceled", err)
		}
		if held, err := d.Exists(testContext(t), "k"); held || err != nil {
			t.Fatalf("Exists after cancelled Acquire = %v, %v; want free", held, err)
		}
	})
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		owner := newOwner(t)
		mustAcquire(t, d, "k", owner, time.Minute)
		if err := d.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		checks := map[string]error{}
		_, checks["Acquire"] = d.Acquire(ctx, "k", owner, time.Minute)
		_, _, checks["AcquireFenced"] = d.AcquireFenced(ctx, "k", owner, time.Minute)
		_, checks["Release"] = d.Release(ctx, "k", owner)
		_, checks["Extend"] = d.Extend(ctx, "k", owner, time.Minute)
		checks["ForceRelease"] = d.ForceRelease(ctx, "k")
		_, checks["Exists"] = d.Exists(ctx, "k")
		_, _, checks["Inspect"] = d.Inspect(ctx, "k")
		for name, err := range checks {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close: %v; want ErrClosed", name, err)
			}
		}
		_, cancel := d.Subscribe("k")
		cancel()
	})
}

func TestCloseDuringOperations(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				owner := newOwner(t)
				for range 200 {
					if _, err := d.Acquire(ctx, "k", owner, time.Minute); err != nil {
						errs <- err
						return
					}
					if _, err := d.Release(ctx, "k", owner); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			})
		}
		if err := d.Close(); err != nil {
			t.Fatalf("Close while in use: %v", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("operation racing Close failed with %v; want nil or ErrClosed", err)
			}
		}
	})
}
