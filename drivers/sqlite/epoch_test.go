package sqlite

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// cycle takes key for a new owner and releases it, and returns the token.
func cycle(t *testing.T, d *Driver, key string) uint64 {
	t.Helper()
	owner := newOwner(t)
	token := mustAcquire(t, d, key, owner, time.Minute)
	if ok, err := d.Release(testContext(t), key, owner); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	return token
}

// copyFile copies src to dst; a missing src is no error when optional.
func copyFile(t *testing.T, src, dst string, optional bool) {
	t.Helper()
	in, err := os.Open(src)
	if optional && os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// storedToken reads key's token from the database file at path.
func storedToken(t *testing.T, path, key string) uint64 {
	t.Helper()
	d := openPath(t, path)
	var token uint64
	if err := d.db.QueryRow(`SELECT token FROM zerotal_lock WHERE key = ?`, key).Scan(&token); err != nil {
		t.Fatal(err)
	}
	return token
}

// A power loss forgets a suffix of the commits that were not synced. The
// test makes one: it copies the database and its write-ahead log as they
// are after the first cycle (what a sync at that moment would have left on
// disk), runs more cycles, and then puts the copies back. The tokens of the
// forgotten cycles must never be handed out again.
func TestTokensRiseAboveForgottenCommits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "locks.db")
	saved := filepath.Join(dir, "saved")
	d := openPath(t, path)
	first := cycle(t, d, "k")
	copyFile(t, path, saved, false)
	copyFile(t, path+"-wal", saved+"-wal", true)
	var last uint64
	for range 5 {
		last = cycle(t, d, "k")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	restoreFiles(t, path, saved)
	if got := storedToken(t, path, "k"); got != first {
		t.Fatalf("the restored file has token %d; want the first cycle's %d (the test lost nothing)", got, first)
	}
	after := openPath(t, path)
	if token := cycle(t, after, "k"); token <= last {
		t.Fatalf("token after the forgotten commits = %d; want above the forgotten %d", token, last)
	}
}

func TestTokenBeyondTheEpochTakesANewEpoch(t *testing.T) {
	_, path := openFile(t)
	older, newer := openPath(t, path), openPath(t, path)
	ctx := testContext(t)
	cycle(t, older, "a") // older's epoch is taken first, so it is the lower one
	newest := cycle(t, newer, "k")
	if older.epoch.Load() >= newer.epoch.Load() {
		t.Fatalf("epochs %d and %d; want the first taken lower", older.epoch.Load(), newer.epoch.Load())
	}

	// The key was last taken under newer's epoch: older's token lies beyond
	// its own epoch's range.
	token := cycle(t, older, "k")
	if token <= newest {
		t.Fatalf("token %d after %d", token, newest)
	}
	if e := older.epoch.Load(); int64(token)>>epochShift >= e {
		t.Fatalf("token %d is in epoch %d, not below the Driver's new epoch %d", token, int64(token)>>epochShift, e)
	}
	var stored int64
	if err := older.db.QueryRowContext(ctx, `SELECT epoch FROM zerotal_lock_epoch`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != older.epoch.Load() {
		t.Fatalf("stored epoch %d; want the Driver's %d", stored, older.epoch.Load())
	}

	// 2^epochShift takeovers under one epoch: the next one is beyond it.
	e := older.epoch.Load()
	full := (e+1)<<epochShift - 1
	if _, err := older.db.ExecContext(ctx, `UPDATE zerotal_lock SET token = ? WHERE key = 'k'`, full); err != nil {
		t.Fatal(err)
	}
	if token := cycle(t, older, "k"); int64(token) != full+1 || older.epoch.Load() <= e+1 {
		t.Fatalf("token %d, epoch %d after %d in epoch %d; want %d and a new epoch above %d", token, older.epoch.Load(), full, e, full+1, e+1)
	}
}

func TestEpochsLeaveTheConnectionUnsynced(t *testing.T) {
	d, _ := openFile(t)
	ctx := testContext(t)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.Acquire(cancelled, "k", newOwner(t), time.Minute); err == nil {
		t.Fatal("Acquire with a cancelled context succeeded")
	}
	if d.epoch.Load() != 0 {
		t.Fatalf("a cancelled first acquire took epoch %d", d.epoch.Load())
	}
	cycle(t, d, "k")
	if d.epoch.Load() == 0 {
		t.Fatal("no epoch after an acquire")
	}
	var mode int
	if err := d.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode); err != nil || mode != 1 {
		t.Fatalf("synchronous = %d, %v; want 1 (NORMAL) once the epoch is taken", mode, err)
	}
}

// restoreFiles puts the copies made by copyFile back in place of the
// database at path, as a power loss that forgot everything since would.
func restoreFiles(t *testing.T, path, saved string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	copyFile(t, saved, path, false)
	copyFile(t, saved+"-wal", path+"-wal", true)
}

// An owner name reused after a power loss (a caller of the Driver may use a
// fixed one) finds the row as it was before the forgotten commits: holding
// the key, with an old token. That is not a refresh.
func TestReusedOwnerAfterForgottenCommits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "locks.db")
	saved := filepath.Join(dir, "saved")
	d := openPath(t, path)
	const fixed = "0123456789abcdef0123456789abcdef"
	mustAcquire(t, d, "k", fixed, time.Minute)
	copyFile(t, path, saved, false)
	copyFile(t, path+"-wal", saved+"-wal", true)
	if ok, err := d.Release(testContext(t), "k", fixed); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	forgotten := cycle(t, d, "k")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	restoreFiles(t, path, saved)
	// A power loss is a reboot: the row's holder is of an earlier boot.
	after := openPath(t, path)
	if _, err := after.db.Exec(`UPDATE zerotal_lock SET pid_scope = 'an-earlier-boot'`); err != nil {
		t.Fatal(err)
	}
	if token := mustAcquire(t, after, "k", fixed, time.Minute); token <= forgotten {
		t.Fatalf("the reused owner got token %d; want above the forgotten %d", token, forgotten)
	}
}
