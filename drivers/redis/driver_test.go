package redis

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestAcquireReleaseCycle(t *testing.T) {
	s := startServer(t)
	a, b := s.open(t), s.open(t)
	ctx := t.Context()
	key := testKey(t, "cycle")
	alice, bob := newOwner(), newOwner()

	if ok, err := a.Acquire(ctx, key, alice, time.Minute); err != nil || !ok {
		t.Fatalf("first Acquire = %v, %v; want true, nil", ok, err)
	}
	if ok, err := b.Acquire(ctx, key, bob, time.Minute); err != nil || ok {
		t.Fatalf("Acquire of a held key by another owner = %v, %v; want false, nil", ok, err)
	}
	if ok, err := b.Release(ctx, key, bob); err != nil || ok {
		t.Fatalf("Release by a non-holder = %v, %v; want false, nil", ok, err)
	}
	if held, err := b.Exists(ctx, key); err != nil || !held {
		t.Fatalf("Exists after a foreign Release = %v, %v; want true, nil", held, err)
	}
	if ok, err := a.Release(ctx, key, alice); err != nil || !ok {
		t.Fatalf("Release by the holder = %v, %v; want true, nil", ok, err)
	}
	if ok, err := a.Release(ctx, key, alice); err != nil || ok {
		t.Fatalf("second Release = %v, %v; want false, nil", ok, err)
	}
	if held, err := b.Exists(ctx, key); err != nil || held {
		t.Fatalf("Exists after Release = %v, %v; want false, nil", held, err)
	}
	if ok, err := b.Acquire(ctx, key, bob, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire after Release = %v, %v; want true, nil", ok, err)
	}
}

func TestSameOwnerAcquireResetsTTL(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "reacquire")
	owner := newOwner()
	lock := redisKeys(key).lock

	if ok, err := d.Acquire(ctx, key, owner, 2*time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if ok, err := d.Acquire(ctx, key, owner, time.Hour); err != nil || !ok {
		t.Fatalf("Acquire by the holder = %v, %v; want true, nil", ok, err)
	}
	pttl, err := rc.PTTL(ctx, lock).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl < 59*time.Minute || pttl > time.Hour {
		t.Fatalf("PTTL after re-acquire with 1h = %v; want about 1h", pttl)
	}
}

func TestTTLIsKeptByServerInMilliseconds(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	owner := newOwner()

	key := testKey(t, "ttl")
	lock := redisKeys(key).lock
	// Rounded to whole seconds, 1.9s would read as at most 1s or 2s.
	if ok, err := d.Acquire(ctx, key, owner, 1900*time.Millisecond); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	pttl, err := rc.PTTL(ctx, lock).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl <= time.Second || pttl > 1900*time.Millisecond {
		t.Fatalf("PTTL of a 1.9s lock = %v; want in (1s, 1.9s]: the TTL must keep millisecond precision", pttl)
	}

	// A 1ms lock is gone by the server's clock without anyone touching it.
	short := testKey(t, "1ms")
	if ok, err := d.Acquire(ctx, short, owner, time.Millisecond); err != nil || !ok {
		t.Fatalf("Acquire 1ms = %v, %v", ok, err)
	}
	if !waitUntil(2*time.Second, func() bool {
		held, err := d.Exists(ctx, short)
		return err == nil && !held
	}) {
		t.Fatal("a 1ms lock was still held 2s later")
	}
	if ok, err := d.Acquire(ctx, short, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire of an expired key by another owner = %v, %v; want true, nil", ok, err)
	}
}

func TestExtend(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "extend")
	lock := redisKeys(key).lock
	owner := newOwner()

	if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend of a free key = %v, %v; want false, nil", ok, err)
	}
	if held, err := d.Exists(ctx, key); err != nil || held {
		t.Fatalf("Extend took a free key: Exists = %v, %v", held, err)
	}
	if ok, err := d.Acquire(ctx, key, owner, time.Second); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if ok, err := d.Extend(ctx, key, newOwner(), time.Hour); err != nil || ok {
		t.Fatalf("Extend by another owner = %v, %v; want false, nil", ok, err)
	}
	if ok, err := d.Extend(ctx, key, owner, time.Hour); err != nil || !ok {
		t.Fatalf("Extend by the holder = %v, %v; want true, nil", ok, err)
	}
	if pttl, err := rc.PTTL(ctx, lock).Result(); err != nil || pttl < 59*time.Minute {
		t.Fatalf("PTTL after Extend(1h) = %v, %v", pttl, err)
	}

	// A lock that expired is not taken back by its old owner's Extend.
	if ok, err := d.Extend(ctx, key, owner, time.Millisecond); err != nil || !ok {
		t.Fatalf("Extend to 1ms = %v, %v", ok, err)
	}
	if !waitUntil(2*time.Second, func() bool {
		held, err := d.Exists(ctx, key)
		return err == nil && !held
	}) {
		t.Fatal("the lock did not expire")
	}
	if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend after expiry = %v, %v; want false, nil", ok, err)
	}
	if held, _ := d.Exists(ctx, key); held {
		t.Fatal("Extend after expiry brought the lock back")
	}
}

func TestForceRelease(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	ctx := t.Context()
	key := testKey(t, "force")

	if err := d.ForceRelease(ctx, key); err != nil {
		t.Fatalf("ForceRelease of a free key: %v", err)
	}
	if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := d.ForceRelease(ctx, key); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	if held, err := d.Exists(ctx, key); err != nil || held {
		t.Fatalf("Exists after ForceRelease = %v, %v; want false, nil", held, err)
	}
}

func TestInspect(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	ctx := t.Context()
	key := testKey(t, "inspect")
	owner := newOwner()

	if _, held, err := d.Inspect(ctx, key); err != nil || held {
		t.Fatalf("Inspect of a free key: held = %v, err = %v", held, err)
	}
	before := time.Now()
	token, ok, err := d.AcquireFenced(ctx, key, owner, 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	after := time.Now()
	h, held, err := d.Inspect(ctx, key)
	if err != nil || !held {
		t.Fatalf("Inspect of a held key: held = %v, err = %v", held, err)
	}
	host, _ := os.Hostname()
	if h.Owner != owner || h.Token != token || h.PID != os.Getpid() || h.Host != host {
		t.Fatalf("Inspect = %+v; want owner %s, token %d, pid %d, host %q", h, owner, token, os.Getpid(), host)
	}
	// The server runs on this host, so its clock is ours; allow for
	// millisecond truncation.
	if h.AcquiredAt.Before(before.Add(-time.Second)) || h.AcquiredAt.After(after.Add(time.Second)) {
		t.Fatalf("AcquiredAt = %v; want between %v and %v", h.AcquiredAt, before, after)
	}
	if d := h.ExpiresAt.Sub(h.AcquiredAt); d < 9*time.Second || d > 10*time.Second+50*time.Millisecond {
		t.Fatalf("ExpiresAt - AcquiredAt = %v; want about the 10s TTL", d)
	}
}

func TestCancelledContext(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	key := testKey(t, "ctx")
	owner := newOwner()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled ctx: err = %v; want context.Canceled", op, err)
		}
	}
	_, err := d.Acquire(ctx, key, owner, time.Minute)
	check("Acquire", err)
	_, _, err = d.AcquireFenced(ctx, key, owner, time.Minute)
	check("AcquireFenced", err)
	_, err = d.Release(ctx, key, owner)
	check("Release", err)
	_, err = d.Extend(ctx, key, owner, time.Minute)
	check("Extend", err)
	check("ForceRelease", d.ForceRelease(ctx, key))
	_, err = d.Exists(ctx, key)
	check("Exists", err)
	_, _, err = d.Inspect(ctx, key)
	check("Inspect", err)
	if held, err := d.Exists(t.Context(), key); err != nil || held {
		t.Fatalf("a call with a cancelled ctx took the key: Exists = %v, %v", held, err)
	}
}

func TestForeignValueIsAnErrorNotContention(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "foreign")
	lock := redisKeys(key).lock
	if err := rc.Set(ctx, lock, "not a lock", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err == nil || ok {
		t.Fatalf("Acquire over a string value = %v, %v; want false and a WRONGTYPE error", ok, err)
	}
	if v, err := rc.Get(ctx, lock).Result(); err != nil || v != "not a lock" {
		t.Fatalf("the foreign value was changed: %q, %v", v, err)
	}

	other := testKey(t, "foreign-hash")
	otherLock := redisKeys(other).lock
	if err := rc.HSet(ctx, otherLock, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Acquire(ctx, other, newOwner(), time.Minute); err == nil || ok {
		t.Fatalf("Acquire over a hash = %v, %v; want false and a WRONGTYPE error", ok, err)
	}
}

func TestOwnerWithNewlineIsRefused(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	ctx := t.Context()
	key := testKey(t, "newline")
	owner := newOwner()
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// owner+"\n"+token would otherwise match the start of owner's value.
	h, _, err := d.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	forged := owner + "\n" + strconv.FormatUint(h.Token, 10)
	if ok, err := d.Release(ctx, key, forged); ok || !errors.Is(err, errOwnerNewline) {
		t.Fatalf("Release by %q = %v, %v; want false, errOwnerNewline", forged, ok, err)
	}
	if _, err := d.Acquire(ctx, key, forged, time.Minute); !errors.Is(err, errOwnerNewline) {
		t.Fatalf("Acquire by an owner with a newline: %v; want errOwnerNewline", err)
	}
	if _, err := d.Extend(ctx, key, forged, time.Minute); !errors.Is(err, errOwnerNewline) {
		t.Fatalf("Extend by an owner with a newline: %v; want errOwnerNewline", err)
	}
	if held, err := d.Exists(ctx, key); err != nil || !held {
		t.Fatalf("the lock was lost: %v, %v", held, err)
	}
}

// The library of functions can vanish (a restart without persistence, a
// FUNCTION FLUSH, a new cluster node): the next call loads it again.
func TestFunctionLibraryFlushed(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "flush")
	owner := newOwner()
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := rc.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Extend after FUNCTION FLUSH = %v, %v", ok, err)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release after FUNCTION FLUSH = %v, %v", ok, err)
	}
	stats := commandCalls(t, rc)
	if stats["function|load"] != 2 || stats["eval"]+stats["evalsha"] != 0 {
		t.Fatalf("want the library loaded twice and no EVAL; commandstats %v", stats)
	}
}

// Where FCALL cannot be used — a server before Redis 7, or a user whose ACL
// lacks it — the driver sends the same scripts to EVALSHA, and to EVAL when
// the script cache was flushed.
func TestScriptsWithoutFunctions(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	if err := rc.Do(ctx, "ACL", "SETUSER", "nofcall", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	d, err := Open("redis://nofcall:pw@" + s.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	key := testKey(t, "eval")
	owner := newOwner()
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := rc.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// EVALSHA answers NOSCRIPT now; each call falls back to EVAL.
	if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Extend after SCRIPT FLUSH = %v, %v", ok, err)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release after SCRIPT FLUSH = %v, %v", ok, err)
	}
	if stats := commandCalls(t, rc); stats["eval"] == 0 || stats["evalsha"] == 0 {
		t.Fatalf("want EVALSHA and the EVAL fallback; commandstats %v", stats)
	}
}

// commandCalls returns INFO commandstats as calls per command.
func commandCalls(t *testing.T, rc *goredis.Client) map[string]int64 {
	t.Helper()
	info, err := rc.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls[name], _ = strconv.ParseInt(n, 10, 64)
	}
	return calls
}

func TestTTLMillisRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Millisecond, 1},
		{1500 * time.Microsecond, 2},
		{time.Microsecond, 1},
		{0, 1},
		{-time.Second, 1},
		{time.Hour, 3_600_000},
	} {
		if got := ttlMillis(tc.ttl); got != tc.want {
			t.Errorf("ttlMillis(%v) = %d; want %d", tc.ttl, got, tc.want)
		}
	}
}
