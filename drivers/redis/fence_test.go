package redis

import (
	"strconv"
	"testing"
	"time"
)

// serverMicros returns the server's clock in microseconds.
func serverMicros(t *testing.T, s *server) uint64 {
	t.Helper()
	now, err := s.client(t).Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return uint64(now.UnixMicro())
}

func TestFencingTokensIncreaseAcrossReleaseAndExpiry(t *testing.T) {
	s := startServer(t)
	a, b := s.open(t), s.open(t)
	ctx := t.Context()
	key := testKey(t, "fence")

	start := serverMicros(t, s)
	var last uint64
	for i := range 200 {
		d := a
		if i%2 == 1 {
			d = b
		}
		owner := newOwner()
		token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute)
		if err != nil || !ok {
			t.Fatalf("cycle %d: AcquireFenced = %v, %v", i, ok, err)
		}
		if token <= last {
			t.Fatalf("cycle %d: token %d after %d; tokens must increase", i, token, last)
		}
		if again, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute); err != nil || !ok || again != token {
			t.Fatalf("cycle %d: re-acquire by the holder = %d, %v, %v; want the same token %d", i, again, ok, err, token)
		}
		if token, ok, err := b.AcquireFenced(ctx, key, newOwner(), time.Minute); err != nil || ok || token != 0 {
			t.Fatalf("cycle %d: contended AcquireFenced = %d, %v, %v; want 0, false, nil", i, token, ok, err)
		}
		last = token
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("cycle %d: Release = %v, %v", i, ok, err)
		}
	}
	if first := last - 199; first < start {
		t.Fatalf("tokens started at or below %d, before the server time %dµs of the first acquisition", first, start)
	}

	// Expiry, not release, ends the next holder; the token still rises.
	if token, ok, err := a.AcquireFenced(ctx, key, newOwner(), time.Millisecond); err != nil || !ok || token <= last {
		t.Fatalf("AcquireFenced = %d, %v, %v; want a token above %d", token, ok, err, last)
	} else {
		last = token
	}
	if !waitUntil(2*time.Second, func() bool { held, err := a.Exists(ctx, key); return err == nil && !held }) {
		t.Fatal("a 1ms lock did not expire")
	}
	if token, ok, err := b.AcquireFenced(ctx, key, newOwner(), time.Minute); err != nil || !ok || token <= last {
		t.Fatalf("AcquireFenced after expiry = %d, %v, %v; want a token above %d", token, ok, err, last)
	}
}

func TestFencingCounterOutranksClock(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "ahead")
	fence := redisKeys(key).fence

	// A counter ahead of the clock (as after the clock stepped back) wins.
	ahead := serverMicros(t, s) + 1_000_000_000
	if err := rc.Set(ctx, fence, ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(3) {
		owner := newOwner()
		token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute)
		if err != nil || !ok || token != ahead+1+i {
			t.Fatalf("AcquireFenced = %d, %v, %v; want %d", token, ok, err, ahead+1+i)
		}
		if _, err := d.Release(ctx, key, owner); err != nil {
			t.Fatal(err)
		}
	}

	// Without a counter (a restart without persistence, or a counter past
	// its retention) the clock alone still outranks older tokens.
	if err := rc.Del(ctx, fence).Err(); err != nil {
		t.Fatal(err)
	}
	before := serverMicros(t, s)
	token, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || !ok || token < before {
		t.Fatalf("AcquireFenced with no counter = %d, %v, %v; want at least the server time %d", token, ok, err, before)
	}
}

func TestFencingCounterExhaustedIsAnError(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "exhausted")
	fence := redisKeys(key).fence

	// Lua numbers are doubles: past 2^53 a token could repeat.
	const limit = 1 << 53
	if err := rc.Set(ctx, fence, strconv.FormatUint(limit-2, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	owner := newOwner()
	if token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute); err != nil || !ok || token != limit-1 {
		t.Fatalf("AcquireFenced = %d, %v, %v; want %d", token, ok, err, uint64(limit-1))
	}
	if _, err := d.Release(ctx, key, owner); err != nil {
		t.Fatal(err)
	}
	if token, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute); err == nil || ok {
		t.Fatalf("AcquireFenced past 2^53 = %d, %v, %v; want an error", token, ok, err)
	}
	if held, err := d.Exists(ctx, key); err != nil || held {
		t.Fatalf("a failed acquire left the key held: %v, %v", held, err)
	}
	if v, err := rc.Get(ctx, fence).Uint64(); err != nil || v != limit-1 {
		t.Fatalf("counter after the failed acquire = %d, %v; want it left at %d", v, err, uint64(limit-1))
	}
}

func TestFenceRetention(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name     string
		opts     []Option
		min, max time.Duration // PTTL bounds; -1 means no expiry
	}{
		{"default", nil, DefaultFenceRetention - time.Minute, DefaultFenceRetention},
		{"5s", []Option{WithFenceRetention(5 * time.Second)}, 4 * time.Second, 5 * time.Second},
		{"forever", []Option{WithFenceRetention(0)}, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(rc, tc.opts...)
			defer d.Close()
			key := testKey(t, "retention")
			fence := redisKeys(key).fence
			if ok, err := d.Acquire(ctx, key, newOwner(), time.Second); err != nil || !ok {
				t.Fatalf("Acquire = %v, %v", ok, err)
			}
			pttl, err := rc.PTTL(ctx, fence).Result()
			if err != nil {
				t.Fatal(err)
			}
			if pttl < tc.min || pttl > tc.max {
				t.Fatalf("counter PTTL = %v; want in [%v, %v]", pttl, tc.min, tc.max)
			}
		})
	}
}
