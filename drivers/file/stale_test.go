package file

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/driver/process"
)

// TestStaleUnreadableMetadata: a lock directory whose metadata cannot be
// read is reclaimed at once, whatever its lease entry's name says.
func TestStaleUnreadableMetadata(t *testing.T) {
	future := time.Now().Add(time.Hour)
	owner := newOwner()
	cases := map[string]map[string][]byte{
		"garbage record": {leaseName(0, future.UnixNano(), owner): []byte("{not json")},
		"empty record":   {leaseName(0, future.UnixNano(), owner): nil},
		"record of another owner": {
			leaseName(0, future.UnixNano(), owner): record(t, localRecord(newOwner(), future)),
		},
		"no lease entry":  {"owner.json": record(t, localRecord(owner, future))},
		"empty directory": {},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDriver(t, dir)
			path := plantLock(t, dir, "k", files)
			wantExists(t, d, "k", false)
			taker := newOwner()
			wantAcquire(t, d, "k", taker, time.Minute, true)
			if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner != taker {
				t.Fatalf("Inspect after reclaim = %+v, %v, %v; want held by %s", h, held, err, taker)
			}
			for _, e := range entries(t, path) {
				if l, ok := parseLease(e); !ok || l.owner != taker {
					t.Errorf("entry %q survived the reclaim", e)
				}
			}
			wantNoPending(t, dir)
		})
	}
}

// TestStaleExpiredLease: a lease that has passed frees the lock; until then
// it is held.
func TestStaleExpiredLease(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	past := time.Now().Add(-time.Millisecond)
	plantHolder(t, dir, "k", localRecord(newOwner(), past))
	wantExists(t, d, "k", false)
	wantAcquire(t, d, "k", newOwner(), time.Minute, true)

	const ttl = 30 * time.Millisecond
	first, second := newOwner(), newOwner()
	start := time.Now()
	mustAcquire(t, d, "k2", first, ttl)
	eventually(t, "the lease passes and another owner takes the key", func() bool {
		ok, err := d.Acquire(testCtx(t), "k2", second, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if took := time.Since(start); took < ttl {
		t.Errorf("key taken after %v, before the %v lease passed", took, ttl)
	}
	if ok, err := d.Extend(testCtx(t), "k2", first, time.Minute); err != nil || ok {
		t.Errorf("Extend by the expired holder = %v, %v; want false", ok, err)
	}
	if ok, err := d.Release(testCtx(t), "k2", first); err != nil || ok {
		t.Errorf("Release by the expired holder = %v, %v; want false", ok, err)
	}
	wantExists(t, d, "k2", true)
}

// TestStaleDeadProcess: a real process takes a lock for a minute and is
// killed with SIGKILL; a waiter on this host takes the lock as soon as the
// process is dead, long before the lease ends, whether its parent has
// collected it yet (a zombie) or not.
func TestStaleDeadProcess(t *testing.T) {
	for _, reap := range []bool{false, true} {
		name := map[bool]string{false: "zombie", true: "reaped"}[reap]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			d := openDriver(t, dir)
			c := startChild(t, "hold", dir, "k", "")
			c.expect(t, "held")
			wantExists(t, d, "k", true)
			wantAcquire(t, d, "k", newOwner(), time.Minute, false)
			h, _, err := d.Inspect(testCtx(t), "k")
			if err != nil || h.PID != c.cmd.Process.Pid {
				t.Fatalf("Inspect = %+v, %v; want the child's pid %d", h, err, c.cmd.Process.Pid)
			}
			if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			if reap {
				_ = c.cmd.Wait()
				wantAcquire(t, d, "k", newOwner(), time.Minute, true)
			} else {
				// Not collected until the cleanup: the holder is a
				// zombie once the kill has landed.
				eventually(t, "the killed holder's lock is taken", func() bool {
					ok, err := d.Acquire(testCtx(t), "k", newOwner(), time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					return ok
				})
			}
			if took := time.Since(killed); took > 20*time.Second {
				t.Errorf("took %v after the kill; the lease is a minute, the holder's death should count at once", took)
			}
		})
	}
}

// TestStaleRecycledPID: a record naming a live pid counts as dead when the
// process with that pid started at another time (the pid was reused), and as
// alive when the start time matches.
func TestStaleRecycledPID(t *testing.T) {
	me := process.Self()
	if me.Start == 0 || me.Scope == "" {
		t.Fatal("cannot read this process's start time or pid scope from /proc")
	}
	future := time.Now().Add(time.Hour)

	dir := t.TempDir()
	d := openDriver(t, dir)
	recycled := localRecord(newOwner(), future)
	recycled.PIDStart = me.Start + 1
	plantHolder(t, dir, "recycled", recycled)
	wantExists(t, d, "recycled", false)
	wantAcquire(t, d, "recycled", newOwner(), time.Minute, true)

	same := localRecord(newOwner(), future)
	plantHolder(t, dir, "same", same)
	wantExists(t, d, "same", true)
	wantAcquire(t, d, "same", newOwner(), time.Minute, false)
	if h, held, err := d.Inspect(testCtx(t), "same"); err != nil || !held || h.PID != me.PID || h.Owner != same.Owner {
		t.Errorf("Inspect = %+v, %v, %v; want held by %s, pid %d", h, held, err, same.Owner, me.PID)
	}
}

// TestStaleForeignHolder: a holder this process cannot judge (another host,
// or this host in another boot or pid namespace) keeps its lock until its
// lease passes, even when its pid would read as dead here.
func TestStaleForeignHolder(t *testing.T) {
	me := process.Self()
	cases := map[string]func(*holderRecord){
		"other host":  func(r *holderRecord) { r.Host = "elsewhere.invalid" },
		"other scope": func(r *holderRecord) { r.Scope = "another-boot/pid:[1]" },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			d := openDriver(t, dir)
			expires := time.Now().Add(time.Second)
			r := localRecord(newOwner(), expires)
			r.PIDStart = me.Start + 1 // dead, were it local
			change(&r)
			plantHolder(t, dir, "k", r)
			wantExists(t, d, "k", true)
			wantAcquire(t, d, "k", newOwner(), time.Minute, false)
			eventually(t, "the foreign lease passes", func() bool {
				ok, err := d.Acquire(testCtx(t), "k", newOwner(), time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			})
			if now := time.Now(); now.Before(expires) {
				t.Errorf("foreign lock taken %v before its lease ended", expires.Sub(now))
			}
		})
	}
}

// TestStaleJunkIsCleared: reclaiming removes whatever else lies in a stale
// lock directory, subdirectories included.
func TestStaleJunkIsCleared(t *testing.T) {
	dir := t.TempDir()
	d := openDriver(t, dir)
	path := plantHolder(t, dir, "k", localRecord(newOwner(), time.Now().Add(-time.Second)))
	if err := os.MkdirAll(filepath.Join(path, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	taker := newOwner()
	wantAcquire(t, d, "k", taker, time.Minute, true)
	got := entries(t, path)
	if len(got) != 1 || !slices.ContainsFunc(got, func(e string) bool { l, ok := parseLease(e); return ok && l.owner == taker }) {
		t.Errorf("lock directory holds %q; want only the new holder's lease entry", got)
	}
}

// TestSymlinksAreNotFollowed: a symbolic link in a lock's place, in place of
// its holder record, or among its entries is never followed, so clearing a
// stale lock cannot delete anything outside the lock directory.
func TestSymlinksAreNotFollowed(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	precious := filepath.Join(outside, "precious")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := openDriver(t, dir)

	// A link as the lock: an error, and nothing behind it is touched.
	if err := os.Symlink(outside, lockPath(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Acquire(testCtx(t), "linked", newOwner(), time.Minute); err == nil || ok {
		t.Errorf("Acquire over a symlink = %v, %v; want an error", ok, err)
	}
	if err := d.ForceRelease(testCtx(t), "linked"); err == nil {
		t.Error("ForceRelease over a symlink: no error")
	}

	// A link as the holder record and another among the entries: the lock
	// is stale (unreadable metadata), and clearing it removes the links.
	owner := newOwner()
	path := plantLock(t, dir, "k", nil)
	for name, target := range map[string]string{
		leaseName(0, time.Now().Add(time.Hour).UnixNano(), owner): precious,
		"junk": outside,
	} {
		if err := os.Symlink(target, filepath.Join(path, name)); err != nil {
			t.Fatal(err)
		}
	}
	wantExists(t, d, "k", false)
	wantAcquire(t, d, "k", newOwner(), time.Minute, true)
	if b, err := os.ReadFile(precious); err != nil || string(b) != "keep me" {
		t.Fatalf("the file behind the links: %q, %v; want it untouched", b, err)
	}
}
