package file

import (
	"context"
	"os"
	"time"

	"github.com/zerotal/lock/driver/waitq"
)

// waitsName is the subdirectory of the lock directory that holds the wait
// rooms: one per key anyone has waited for, named like the key's lock
// directory. It starts with a dot, so it can never be a lock's name, and the
// sweep of pending directories leaves it alone.
const waitsName = ".waits"

// room returns key's wait room.
func (d *Driver) room(key string) string {
	return lockPath(d.dir+string(os.PathSeparator)+waitsName, key)
}

// AcquireWait implements driver.Waiter: it takes key for owner for ttl,
// waiting first come, first served behind the other waiters of every process
// using this lock directory. A release in this process wakes the head of the
// queue through the notice board, a release or a death in another process
// through the key's room (on Linux); without either the head tries every
// waitq.Poll. A caller of Acquire (Try) does not queue and may take a key
// that the queue's head is about to take. The token is 0: no Fencer.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.begin(ctx); err != nil {
		return 0, err
	}
	if err := checkOwner(owner); err != nil {
		return 0, err
	}
	if !d.waiting.Start() {
		return 0, ErrClosed
	}
	defer d.waiting.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(d.life, cancel)
	defer stop()
	notices, unsubscribe := d.Subscribe(key)
	defer unsubscribe()
	err := waitq.Wait(ctx, d.room(key), func(ctx context.Context) (bool, error) {
		return d.Acquire(ctx, key, owner, ttl)
	}, notices)
	if err != nil {
		// The last try may have taken the key before its ctx ended:
		// give back whatever owner may hold, as the Waiter contract asks.
		d.giveBack(key, owner)
		if d.closed.Load() {
			return 0, ErrClosed
		}
	}
	return 0, err
}

// giveBack releases owner's possible acquisition of key (waitq.GiveBack).
func (d *Driver) giveBack(key, owner string) {
	waitq.GiveBack(func(ctx context.Context) (bool, error) { return d.release(key, owner) })
}
