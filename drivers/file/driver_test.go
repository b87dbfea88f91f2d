package file

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

// TestOwnerGuard: a held key refuses other owners, a non-owner's Release
// leaves it alone, the owner's Release frees it and removes its directory.
func TestOwnerGuard(t *testing.T) {
	dir := t.TempDir()
	a, b := openDriver(t, dir), openDriver(t, dir) // two instances, one directory
	holder, other := newOwner(), newOwner()
	mustAcquire(t, a, "k", holder, time.Minute)
	wantAcquire(t, b, "k", other, time.Minute, false)
	wantExists(t, b, "k", true)
	if ok, err := b.Release(testCtx(t), "k", other); err != nil || ok {
		t.Fatalf("Release by a non-owner = %v, %v; want false", ok, err)
	}
	if h, held, err := b.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner != holder {
		t.Fatalf("after a non-owner's Release, Inspect = %+v, %v, %v; want held by %s", h, held, err, holder)
	}
	if ok, err := b.Release(testCtx(t), "never-taken", other); err != nil || ok {
		t.Fatalf("Release of a free key = %v, %v; want false", ok, err)
	}
	if ok, err := a.Release(testCtx(t), "k", holder); err != nil || !ok {
		t.Fatalf("Release by the owner = %v, %v; want true", ok, err)
	}
	if ok, err := a.Release(testCtx(t), "k", holder); err != nil || ok {
		t.Fatalf("second Release = %v, %v; want false", ok, err)
	}
	wantExists(t, a, "k", false)
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("lock directory after release holds %q; want nothing", got)
	}
	wantAcquire(t, b, "k", other, time.Minute, true)
}

// TestReacquireResetsLease: the holder's own Acquire returns true and sets
// the lease to ttl from now, shorter or longer than before, leaving one
// extension entry behind at most.
func TestReacquireResetsLease(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	owner := newOwner()
	mustAcquire(t, d, "k", owner, time.Minute)
	for _, ttl := range []time.Duration{time.Hour, 2 * time.Minute, 3 * time.Hour} {
		before := time.Now()
		mustAcquire(t, d, "k", owner, ttl)
		after := time.Now()
		h, held, err := d.Inspect(testCtx(t), "k")
		if err != nil || !held {
			t.Fatalf("Inspect = %v, %v", held, err)
		}
		if h.ExpiresAt.Before(before.Add(ttl)) || h.ExpiresAt.After(after.Add(ttl)) {
			t.Errorf("after re-acquiring for %v, lease ends %v after the call; want %v", ttl, h.ExpiresAt.Sub(before), ttl)
		}
	}
	if got := entries(t, lockPath(dir, "k")); len(got) != 2 {
		t.Errorf("lock directory holds %q; want lease 0 and the newest extension", got)
	}
}

// TestExtend: only the owner of a live lock extends it, and Extend never
// takes a key.
func TestExtend(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	owner := newOwner()
	if ok, err := d.Extend(testCtx(t), "k", owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend of a free key = %v, %v; want false", ok, err)
	}
	if _, err := os.Lstat(lockPath(dir, "k")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Extend of a free key created %s (%v)", lockPath(dir, "k"), err)
	}
	mustAcquire(t, d, "k", owner, time.Minute)
	if ok, err := d.Extend(testCtx(t), "k", newOwner(), time.Hour); err != nil || ok {
		t.Fatalf("Extend by a non-owner = %v, %v; want false", ok, err)
	}
	before := time.Now()
	if ok, err := d.Extend(testCtx(t), "k", owner, time.Hour); err != nil || !ok {
		t.Fatalf("Extend by the owner = %v, %v; want true", ok, err)
	}
	if h, _, _ := d.Inspect(testCtx(t), "k"); h.ExpiresAt.Before(before.Add(time.Hour)) {
		t.Errorf("lease ends %v; want at least an hour after the Extend", h.ExpiresAt)
	}
	if ok, err := d.Release(testCtx(t), "k", owner); err != nil || !ok {
		t.Fatalf("Release after Extend = %v, %v; want true", ok, err)
	}
	if ok, err := d.Extend(testCtx(t), "k", owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend after Release = %v, %v; want false", ok, err)
	}
}

// TestForceRelease frees a key whoever holds it; a free key is no error.
func TestForceRelease(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	if err := d.ForceRelease(testCtx(t), "k"); err != nil {
		t.Fatalf("ForceRelease of a free key: %v", err)
	}
	owner := newOwner()
	mustAcquire(t, d, "k", owner, time.Minute)
	if ok, err := d.Extend(testCtx(t), "k", owner, time.Minute); err != nil || !ok {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	if err := d.ForceRelease(testCtx(t), "k"); err != nil {
		t.Fatal(err)
	}
	wantExists(t, d, "k", false)
	if ok, err := d.Release(testCtx(t), "k", owner); err != nil || ok {
		t.Fatalf("Release after ForceRelease = %v, %v; want false", ok, err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("lock directory after ForceRelease holds %q; want nothing", got)
	}
	wantAcquire(t, d, "k", newOwner(), time.Minute, true)
}

// TestInspect reports the holder as recorded, with nanosecond times.
func TestInspect(t *testing.T) {
	d := openDriver(t, t.TempDir())
	if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || held || h != (driver.Holder{}) {
		t.Fatalf("Inspect of a free key = %+v, %v, %v", h, held, err)
	}
	owner := newOwner()
	ttl := time.Minute + 123456*time.Nanosecond
	before := time.Now()
	mustAcquire(t, d, "k", owner, ttl)
	after := time.Now()
	h, held, err := d.Inspect(testCtx(t), "k")
	if err != nil || !held {
		t.Fatalf("Inspect = %v, %v", held, err)
	}
	host, _ := os.Hostname()
	if h.Owner != owner || h.PID != os.Getpid() || h.Host != host || h.Token != 0 {
		t.Errorf("Inspect = %+v; want owner %s, pid %d, host %q, token 0", h, owner, os.Getpid(), host)
	}
	if h.AcquiredAt.Before(before) || h.AcquiredAt.After(after) {
		t.Errorf("AcquiredAt %v outside the Acquire call [%v, %v]", h.AcquiredAt, before, after)
	}
	if h.ExpiresAt.Sub(h.AcquiredAt) != ttl {
		t.Errorf("lease %v after acquisition; want exactly %v", h.ExpiresAt.Sub(h.AcquiredAt), ttl)
	}
}

// TestMillisecondTTL: a 1ms lease is kept to the nanosecond and frees the
// key once it passes.
func TestMillisecondTTL(t *testing.T) {
	d := openDriver(t, t.TempDir())
	start := time.Now()
	mustAcquire(t, d, "k", newOwner(), time.Millisecond)
	eventually(t, "a 1ms lease passes", func() bool {
		ok, err := d.Acquire(testCtx(t), "k", newOwner(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if took := time.Since(start); took < time.Millisecond {
		t.Errorf("1ms lease freed after %v", took)
	}
}

// TestNotifier: Release and ForceRelease in one driver wake subscribers of
// that key in another driver on the same directory, spelled differently.
func TestNotifier(t *testing.T) {
	dir := t.TempDir()
	a := openDriver(t, dir)
	b := openDriver(t, dir+"/./")
	baseline := board.count.Load()
	notices, cancel := b.Subscribe("k")
	others, cancelOthers := b.Subscribe("other")
	defer cancelOthers()

	owner := newOwner()
	mustAcquire(t, a, "k", owner, time.Minute)
	if ok, err := a.Release(testCtx(t), "k", owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	wantNotice(t, notices, true)
	wantNotice(t, others, false) // notify is synchronous: it would be there by now

	mustAcquire(t, a, "k", newOwner(), time.Minute)
	if err := a.ForceRelease(testCtx(t), "k"); err != nil {
		t.Fatal(err)
	}
	wantNotice(t, notices, true)

	if ok, err := a.Release(testCtx(t), "k", owner); err != nil || ok {
		t.Fatalf("Release of a free key = %v, %v", ok, err)
	}
	wantNotice(t, notices, false)

	cancel()
	cancel()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := board.count.Load(); got != baseline {
		t.Errorf("%d subscriptions left after cancel and Close; want %d", got, baseline)
	}
}

// wantNotice checks whether a notice is waiting on ch.
func wantNotice(t *testing.T, ch <-chan struct{}, want bool) {
	t.Helper()
	select {
	case <-ch:
		if !want {
			t.Error("unexpected notice")
		}
	default:
		if want {
			t.Error("no notice")
		}
	}
}

// TestClose is idempotent, and every method fails after it.
func TestClose(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx, owner := testCtx(t), newOwner()
	_, err1 := d.Acquire(ctx, "k", owner, time.Minute)
	_, err2 := d.Release(ctx, "k", owner)
	err3 := d.ForceRelease(ctx, "k")
	_, err4 := d.Exists(ctx, "k")
	_, err5 := d.Extend(ctx, "k", owner, time.Minute)
	_, _, err6 := d.Inspect(ctx, "k")
	for i, err := range []error{err1, err2, err3, err4, err5, err6} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("method %d after Close: %v; want ErrClosed", i+1, err)
		}
	}
	ch, cancel := d.Subscribe("k")
	cancel()
	wantNotice(t, ch, false)
}

// TestCanceledContext: a call with an ended ctx returns its error.
func TestCanceledContext(t *testing.T) {
	d := openDriver(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Acquire(ctx, "k", newOwner(), time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a canceled ctx: %v", err)
	}
	wantExists(t, d, "k", false)
}

// TestBadInput: input the engine never passes gives errors, not panics or
// files outside the lock directory.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	for _, owner := range []string{"", "a.b", "../x", "a/b", strings.Repeat("a", maxOwnerLen+1)} {
		if _, err := d.Acquire(testCtx(t), "k", owner, time.Minute); err == nil {
			t.Errorf("Acquire with owner %q: no error", owner)
		}
		if _, err := d.Release(testCtx(t), "k", owner); err == nil {
			t.Errorf("Release with owner %q: no error", owner)
		}
		if _, err := d.Extend(testCtx(t), "k", owner, time.Minute); err == nil {
			t.Errorf("Extend with owner %q: no error", owner)
		}
	}
	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond} {
		if _, err := d.Acquire(testCtx(t), "k", newOwner(), ttl); err == nil {
			t.Errorf("Acquire with ttl %v: no error", ttl)
		}
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("bad input left %q behind", got)
	}
}

// TestAwkwardKeys: keys with separators, dots, non-ASCII bytes and the
// maximum length all work and stay inside the lock directory.
func TestAwkwardKeys(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	keys := []string{".", "..", "/", "../../escape", "a/b", "a_b", "\xff\xfe", "ключ", ".pending-x", "lease.0.1.a",
		strings.Repeat("k", 1024), strings.Repeat("/", 1024), strings.Repeat("é", 512)}
	owner := newOwner()
	for _, key := range keys {
		mustAcquire(t, d, key, owner, time.Minute)
	}
	if got := entries(t, dir); len(got) != len(keys) {
		t.Fatalf("%d keys made %d lock directories: %q", len(keys), len(got), got)
	}
	for _, key := range keys {
		wantExists(t, d, key, true)
		if ok, err := d.Release(testCtx(t), key, owner); err != nil || !ok {
			t.Errorf("Release(%q) = %v, %v", key, ok, err)
		}
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after releasing every key, the lock directory holds %q", got)
	}
}

// TestLockPathIsAFile: something that is not a directory in a lock's place
// gives an error naming it, never a lock.
func TestLockPathIsAFile(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	path := lockPath(dir, "k")
	if err := os.WriteFile(path, []byte("not a lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Acquire(testCtx(t), "k", newOwner(), time.Minute); err == nil || ok || !strings.Contains(err.Error(), path) {
		t.Errorf("Acquire = %v, %v; want an error naming %s", ok, err, path)
	}
	if _, err := d.Exists(testCtx(t), "k"); err == nil {
		t.Error("Exists: no error")
	}
	wantNoPending(t, dir)
}

// TestNoPendingLeftBehind: contended, reclaimed and refused acquisitions
// leave no pending directory behind.
func TestNoPendingLeftBehind(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	mustAcquire(t, d, "held", newOwner(), time.Minute)
	plantHolder(t, dir, "stale", localRecord(newOwner(), time.Now().Add(-time.Second)))
	for range 20 {
		wantAcquire(t, d, "held", newOwner(), time.Minute, false)
	}
	wantAcquire(t, d, "stale", newOwner(), time.Minute, true)
	wantNoPending(t, dir)
}

// TestHugeTTL: a TTL whose end overflows Unix nanoseconds is a lease that
// never ends, not one that ended long ago.
func TestHugeTTL(t *testing.T) {
	d := openDriver(t, t.TempDir())
	owner := newOwner()
	mustAcquire(t, d, "k", owner, time.Duration(math.MaxInt64))
	wantExists(t, d, "k", true)
	if ok, err := d.Extend(testCtx(t), "k", owner, time.Duration(math.MaxInt64)); err != nil || !ok {
		t.Fatalf("Extend = %v, %v; want true", ok, err)
	}
	wantAcquire(t, d, "k", newOwner(), time.Minute, false)
}
