package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestRestartWithoutPersistenceLosesLocksNeverSilently(t *testing.T) {
	s := startServer(t)
	holder, other := s.open(t), s.open(t)
	ctx := t.Context()
	key := testKey(t, "restart")
	owner := newOwner()

	before, ok, err := holder.AcquireFenced(ctx, key, owner, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	s.restart(t)

	// The server forgot the lock: the holder's refresh must not succeed.
	if ok, err := holder.Extend(ctx, key, owner, time.Minute); ok {
		t.Fatalf("Extend after a restart that lost the lock = true, %v; want false or an error", err)
	}
	after, ok, err := other.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced after restart = %v, %v", ok, err)
	}
	if after <= before {
		t.Fatalf("token after restart %d <= token before %d: a paused holder from before the restart would out-rank the new one", after, before)
	}
	if ok, err := holder.Release(ctx, key, owner); err != nil || ok {
		t.Fatalf("Release by the holder from before the restart = %v, %v; want false, nil", ok, err)
	}
	if h, held, err := other.Inspect(ctx, key); err != nil || !held || h.Token != after {
		t.Fatalf("Inspect = %+v, %v, %v; want the new holder with token %d", h, held, err, after)
	}
}

// proxiedDriver returns a Driver whose client reaches s only through a
// cutProxy.
func proxiedDriver(t *testing.T, s *server) (*Driver, *cutProxy) {
	t.Helper()
	p := startProxy(t, s.addr())
	c := goredis.NewClient(&goredis.Options{Addr: p.addr()})
	t.Cleanup(func() { _ = c.Close() })
	d := New(c)
	t.Cleanup(func() { _ = d.Close() })
	return d, p
}

func TestDroppedConnectionDuringAcquire(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	for _, tc := range []struct {
		name string
		mode proxyMode
		ran  bool // whether the server ran the script
	}{
		{"before the server ran it", cutBeforeScript, false},
		{"after the server ran it", cutAfterReply, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			d, p := proxiedDriver(t, s)
			rc := s.client(t)
			ctx := t.Context()
			key := testKey(t, "dropped")
			lock := redisKeys(key).lock

			// Load the script, so that the cut EVALSHA would run rather
			// than answer NOSCRIPT.
			cycle(t, d, testKey(t, "warm-up"))
			p.setMode(tc.mode)
			ok, err := d.Acquire(ctx, key, newOwner(), ttl)
			if err == nil || ok {
				t.Fatalf("Acquire over a dropped connection = %v, %v; want false and an error", ok, err)
			}
			if p.cuts.Load() == 0 {
				t.Fatal("the proxy cut nothing: the test did not exercise a dropped connection")
			}
			pttl, err := rc.PTTL(ctx, lock).Result()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !tc.ran && pttl != -2*time.Nanosecond:
				t.Fatalf("the script never reached the server, yet the key exists (PTTL %v)", pttl)
			case tc.ran && (pttl <= 0 || pttl > ttl):
				t.Fatalf("PTTL of the orphaned lock = %v; want in (0, %v]", pttl, ttl)
			}
			// Whatever was left expires by its TTL, for others to take.
			if !waitUntil(ttl+5*time.Second, func() bool {
				n, err := rc.Exists(ctx, lock).Result()
				return err == nil && n == 0
			}) {
				t.Fatalf("the lock outlived its %v TTL", ttl)
			}
			p.setMode(passScripts)
			if ok, err := d.Acquire(ctx, key, newOwner(), ttl); err != nil || !ok {
				t.Fatalf("Acquire once the network is back = %v, %v", ok, err)
			}
		})
	}
}

func TestStalledNetworkEndsWithContext(t *testing.T) {
	s := startServer(t)
	p := startProxy(t, s.addr())
	d, err := Open("redis://" + p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p.setMode(stallScripts)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	ok, err := d.Acquire(ctx, testKey(t, "stall"), newOwner(), time.Minute)
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a stalled network = %v, %v; want false and context.DeadlineExceeded", ok, err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("Acquire returned %v after its 300ms deadline", elapsed)
	}
}

func TestStalledNetworkEndsWithCancelByReadTimeout(t *testing.T) {
	s := startServer(t)
	p := startProxy(t, s.addr())
	d, err := Open("redis://" + p.addr() + "?read_timeout=500ms")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p.setMode(stallScripts)
	ctx, cancel := context.WithCancel(t.Context())
	stop := time.AfterFunc(100*time.Millisecond, cancel)
	defer stop.Stop()
	start := time.Now()
	ok, err := d.Acquire(ctx, testKey(t, "stall"), newOwner(), time.Minute)
	if ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire on a stalled network, cancelled = %v, %v; want false and context.Canceled", ok, err)
	}
	// go-redis cannot interrupt a read for a cancel without a deadline; its
	// read timeout ends the call, and the cancelled ctx stops the retries.
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("Acquire returned %v after its cancel; want about the 500ms read timeout", elapsed)
	}
}
