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

func TestFencingLastTokenOutranksClock(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "ahead")
	lock := redisKeys(key).lock

	// A released key whose last token is ahead of the clock (as after the
	// clock stepped back) counts on from that token.
	ahead := serverMicros(t, s) + 1_000_000_000
	if err := rc.Set(ctx, lock, "~"+strconv.FormatUint(ahead, 10), time.Minute).Err(); err != nil {
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

	// Without the last token (a restart without persistence, a holder
	// that expired, a tombstone past its retention) the clock alone still
	// outranks older tokens.
	if err := rc.Del(ctx, lock).Err(); err != nil {
		t.Fatal(err)
	}
	before := serverMicros(t, s)
	token, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || !ok || token < before {
		t.Fatalf("AcquireFenced with no last token = %d, %v, %v; want at least the server time %d", token, ok, err, before)
	}
}

func TestFencingTokenPastDoublePrecisionIsAnError(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "exhausted")
	lock := redisKeys(key).lock

	// Lua numbers are doubles: past 2^53 a token could repeat.
	const limit = 1 << 53
	if err := rc.Set(ctx, lock, "~"+strconv.FormatUint(limit-2, 10), time.Minute).Err(); err != nil {
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
	if v, err := rc.Get(ctx, lock).Result(); err != nil || v != "~"+strconv.FormatUint(limit-1, 10) {
		t.Fatalf("tombstone after the failed acquire = %q, %v; want it left at token %d", v, err, uint64(limit-1))
	}
}

func TestFenceRetention(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name     string
		opts     []Option
		min, max time.Duration // PTTL bounds of the tombstone; -1 means no expiry
	}{
		{"default", nil, DefaultFenceRetention - time.Minute, DefaultFenceRetention},
		{"5s", []Option{WithFenceRetention(5 * time.Second)}, 4 * time.Second, 5 * time.Second},
		{"forever", []Option{WithFenceRetention(0)}, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(rc, tc.opts...)
			defer d.Close()
			key, owner := testKey(t, "retention"), newOwner()
			lock := redisKeys(key).lock
			token, ok, err := d.AcquireFenced(ctx, key, owner, time.Second)
			if err != nil || !ok {
				t.Fatalf("AcquireFenced = %v, %v", ok, err)
			}
			if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			if v, err := rc.Get(ctx, lock).Result(); err != nil || v != "~"+strconv.FormatUint(token, 10) {
				t.Fatalf("released lock = %q, %v; want a tombstone with token %d", v, err, token)
			}
			pttl, err := rc.PTTL(ctx, lock).Result()
			if err != nil {
				t.Fatal(err)
			}
			if pttl < tc.min || pttl > tc.max {
				t.Fatalf("tombstone PTTL = %v; want in [%v, %v]", pttl, tc.min, tc.max)
			}
		})
	}
}

func TestTombstoneIsFree(t *testing.T) {
	s := startServer(t)
	a, b := s.open(t), s.open(t)
	ctx := t.Context()
	key, owner := testKey(t, "tombstone"), newOwner()
	if ok, err := a.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if ok, err := a.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// The tombstone still names nobody: the last owner's calls fail.
	if ok, err := a.Release(ctx, key, owner); err != nil || ok {
		t.Fatalf("second Release = %v, %v; want false", ok, err)
	}
	if ok, err := a.Extend(ctx, key, owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend of a released key = %v, %v; want false", ok, err)
	}
	if held, err := a.Exists(ctx, key); err != nil || held {
		t.Fatalf("Exists of a released key = %v, %v; want false", held, err)
	}
	if _, held, err := a.Inspect(ctx, key); err != nil || held {
		t.Fatalf("Inspect of a released key: held = %v, %v; want free", held, err)
	}
	if err := a.ForceRelease(ctx, key); err != nil {
		t.Fatalf("ForceRelease of a released key: %v", err)
	}
	if ok, err := b.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire of a released key by another owner = %v, %v; want true", ok, err)
	}
}
