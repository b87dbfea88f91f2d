package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"time"

	"github.com/zerotal/lock/driver/waitq"
)

// Waiting processes queue in rooms beside the database: the directory
// "<db>.waits" holds one room per key that anyone has waited for, named by
// the key's SHA-256 (keys are up to 1280 bytes, any UTF-8; names must be
// short and safe). The queue lives in files rather than in a table because a
// waiter's liveness is then the kernel's flock on its ticket, dropped when
// its process dies in any namespace, and because queueing costs no commit
// (writers of the database take turns). See package waitq.

// waitsDir returns the directory of a database file's rooms.
func waitsDir(dbPath string) string { return dbPath + ".waits" }

// room returns key's room, or "" for a private in-memory database, whose
// waiters all live in this process and are woken by the hub.
func (d *Driver) room(key string) string {
	if d.waits == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return d.waits + string(os.PathSeparator) + hex.EncodeToString(sum[:])
}

// AcquireWait takes key for owner for ttl, waiting first come, first served
// behind the other waiters of every process on this database, and returns
// the acquisition's fencing token. A release in this process wakes the head
// of the queue through the hub, a release or death in another process
// through the room (on Linux); without either the head tries every
// waitq.Poll. A caller of Acquire (Try) does not queue and may take a key
// that the queue's head is about to take.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if !d.waiting.Start() {
		return 0, ErrClosed
	}
	defer d.waiting.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(d.life, cancel)
	defer stop()
	notices, unsubscribe := d.hub.subscribe(key)
	defer unsubscribe()
	var token uint64
	err := waitq.Wait(ctx, d.room(key), func(ctx context.Context) (bool, error) {
		t, ok, err := d.AcquireFenced(ctx, key, owner, ttl)
		token = t
		return ok, err
	}, notices)
	if err != nil {
		// The last try may have committed before its ctx ended: give
		// back whatever owner may hold, as the Waiter contract asks.
		d.giveBack(key, owner)
		if d.closed.Load() {
			return 0, d.fail("acquire wait", err)
		}
		return 0, err
	}
	return token, nil
}

// giveBack releases owner's possible acquisition of key (waitq.GiveBack).
func (d *Driver) giveBack(key, owner string) {
	waitq.GiveBack(func(ctx context.Context) (bool, error) { return d.release(ctx, key, owner) })
}
