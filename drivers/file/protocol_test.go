package file

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"
)

// These tests drive the steps of the protocol described in lockdir.go in the
// interleavings that matter, one step at a time, instead of hoping a stress
// run happens to hit them.

// reclaimer is a would-be holder stopped between the steps of a reclaim.
type reclaimer struct {
	l *lockDir
	s snapshot
	p *pending
}

// startReclaim opens and lists key's lock and checks that it reads as stale.
func startReclaim(t *testing.T, d *Driver, key string) *reclaimer {
	t.Helper()
	l, err := openLockDir(lockPath(d.dir, key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	s, err := l.list()
	if err != nil {
		t.Fatal(err)
	}
	if held, _, err := l.assess(s, time.Now().UnixNano()); err != nil || held {
		t.Fatalf("assess = %v, %v; want stale", held, err)
	}
	owner := newOwner()
	expires := time.Now().Add(time.Minute).UnixNano()
	p, err := build(d.dir, appendRecord(nil, d.record, owner, time.Now().UnixNano(), expires), owner, expires)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.discard() })
	return &reclaimer{l: l, s: s, p: p}
}

// finish clears what the reclaimer listed and publishes its lock.
func (r *reclaimer) finish(t *testing.T, d *Driver, key string) bool {
	t.Helper()
	if _, err := r.l.clear(r.s); err != nil {
		t.Fatal(err)
	}
	ok, err := r.p.publish(lockPath(d.dir, key))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// holderView is the holder's own handle on its lock directory, opened before
// anyone reclaims it, as Extend and Release have.
func holderView(t *testing.T, d *Driver, key string) (*lockDir, snapshot) {
	t.Helper()
	l, s, err := d.look(key)
	if err != nil || l == nil {
		t.Fatalf("look = %v, %v", l, err)
	}
	t.Cleanup(l.close)
	return l, s
}

// expiringLock takes key for a fresh owner with a lease that has just ended,
// and returns the owner.
func expiringLock(t *testing.T, d *Driver, key string) string {
	t.Helper()
	owner := newOwner()
	mustAcquire(t, d, key, owner, 5*time.Millisecond)
	eventually(t, "the lease passes", func() bool {
		held, err := d.Exists(testCtx(t), key)
		return err == nil && !held
	})
	return owner
}

// TestReclaimLosesToLateExtend: the holder's Extend passed its expiry check
// just before the lease ended, and creates its new lease entry after a
// reclaimer judged the lock stale but before it published. The reclaim must
// fail and the holder keep the lock.
func TestReclaimLosesToLateExtend(t *testing.T) {
	d := openDriver(t, t.TempDir())
	holder := expiringLock(t, d, "k")
	hl, hs := holderView(t, d, "k")
	r := startReclaim(t, d, "k")

	n, _ := hs.newest()
	if err := hl.renew(hs, n, holder, time.Now().Add(time.Minute).UnixNano()); err != nil {
		t.Fatalf("holder's renew: %v", err)
	}
	if r.finish(t, d, "k") {
		t.Fatal("reclaimer published over a lock its holder had just extended")
	}
	if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner != holder {
		t.Fatalf("Inspect = %+v, %v, %v; want still held by %s", h, held, err, holder)
	}
	wantAcquire(t, d, "k", newOwner(), time.Minute, false)
	if ok, err := d.Release(testCtx(t), "k", holder); err != nil || !ok {
		t.Fatalf("holder's Release = %v, %v; want true", ok, err)
	}
}

// TestExtendAfterReclaimFails: the reclaimer published first; the holder's
// late Extend, through its descriptor of the old directory, must fail and
// leave the new holder alone.
func TestExtendAfterReclaimFails(t *testing.T) {
	d := openDriver(t, t.TempDir())
	holder := expiringLock(t, d, "k")
	hl, hs := holderView(t, d, "k")
	r := startReclaim(t, d, "k")
	if !r.finish(t, d, "k") {
		t.Fatal("reclaim of a stale lock failed")
	}
	n, _ := hs.newest()
	err := hl.renew(hs, n, holder, time.Now().Add(time.Minute).UnixNano())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("holder's late renew = %v; want ErrNotExist (its directory is gone)", err)
	}
	if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner == holder {
		t.Fatalf("Inspect = %+v, %v, %v; want held by the reclaimer", h, held, err)
	}
}

// TestTwoReclaimersOneWins: two reclaimers judge the same stale lock, both
// clear it, both publish: exactly one succeeds, and the other then sees a
// live lock.
func TestTwoReclaimersOneWins(t *testing.T) {
	d := openDriver(t, t.TempDir())
	expiringLock(t, d, "k")
	a, b := startReclaim(t, d, "k"), startReclaim(t, d, "k")
	if _, err := a.l.clear(a.s); err != nil {
		t.Fatal(err)
	}
	if _, err := b.l.clear(b.s); err != nil {
		t.Fatal(err)
	}
	path := lockPath(d.dir, "k")
	aok, err := a.p.publish(path)
	if err != nil {
		t.Fatal(err)
	}
	bok, err := b.p.publish(path)
	if err != nil {
		t.Fatal(err)
	}
	if aok == bok {
		t.Fatalf("publish results %v and %v; want exactly one winner", aok, bok)
	}
	wantExists(t, d, "k", true)
}

// TestLateReleaseSparesNewHolder: the holder's Release checked its lease
// while it was live, the lease then ended and another process reclaimed the
// lock; Release's removals must touch nothing of the new lock, and report
// false.
func TestLateReleaseSparesNewHolder(t *testing.T) {
	d := openDriver(t, t.TempDir())
	holder := newOwner()
	mustAcquire(t, d, "k", holder, 300*time.Millisecond) // still live at holderView, on a loaded machine
	hl, hs := holderView(t, d, "k")
	if n, _ := hs.newest(); n.owner != holder || n.expires <= time.Now().UnixNano() {
		t.Fatalf("holder's view %+v; want its live lease", n)
	}
	eventually(t, "the lease passes", func() bool {
		held, err := d.Exists(testCtx(t), "k")
		return err == nil && !held
	})
	r := startReclaim(t, d, "k")
	if !r.finish(t, d, "k") {
		t.Fatal("reclaim of a stale lock failed")
	}
	released, err := hl.clear(hs)
	if err != nil || released {
		t.Fatalf("late clear = %v, %v; want false, nil", released, err)
	}
	if err := hl.retire(); err != nil {
		t.Fatal(err)
	}
	if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner == holder {
		t.Fatalf("Inspect = %+v, %v, %v; want the reclaimer's lock intact", h, held, err)
	}
}

// TestReleaseRetiresRefilledDirectory: an Extend by the same owner adds a
// lease entry after Release listed the directory; Release must still leave
// no lock behind.
func TestReleaseRetiresRefilledDirectory(t *testing.T) {
	d := openDriver(t, t.TempDir())
	owner := newOwner()
	mustAcquire(t, d, "k", owner, time.Minute)
	rl, rs := holderView(t, d, "k")
	if ok, err := d.Extend(testCtx(t), "k", owner, time.Minute); err != nil || !ok {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	if released, err := rl.clear(rs); err != nil || !released {
		t.Fatalf("clear = %v, %v; want true", released, err)
	}
	wantExists(t, d, "k", true) // the extension entry is still there
	if err := rl.retire(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(lockPath(d.dir, "k")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lock directory after retire: %v; want it gone", err)
	}
}

// TestRetireSparesNewerLock: ForceRelease emptied a lock, and before its
// rmdir another owner published a new one at the name: rmdir must leave the
// new lock alone.
func TestRetireSparesNewerLock(t *testing.T) {
	d := openDriver(t, t.TempDir())
	mustAcquire(t, d, "k", newOwner(), time.Minute)
	fl, snap := holderView(t, d, "k")
	if _, err := fl.clear(snap); err != nil {
		t.Fatal(err)
	}
	newer := newOwner()
	mustAcquire(t, d, "k", newer, time.Minute) // replaces the empty directory
	if err := fl.retire(); err != nil {
		t.Fatal(err)
	}
	if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner != newer {
		t.Fatalf("Inspect = %+v, %v, %v; want held by %s", h, held, err, newer)
	}
}
