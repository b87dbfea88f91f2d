package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Durability and fencing tokens.
//
// The database runs with synchronous=NORMAL: a commit is in the write-ahead
// log, and visible to every process, when its call returns, but reaches the
// disk only at the next commit that syncs the log or at a checkpoint. A
// process that crashes loses nothing (the log is in the kernel's page
// cache); a power loss or a kernel crash may forget the last commits, and
// always a suffix of them (the log is read back up to its first incomplete
// frame). A forgotten release, refresh or force release is harmless: every
// process that held or waited for a lock died with the host, and the key
// comes back as held by a process of an earlier boot, which its TTL frees.
// A forgotten acquisition is not harmless: its token may have reached a
// resource that remembers it, and a counter that went back would hand the
// same token out again after the reboot. Syncing every acquisition would
// prevent that at the price of an fsync per acquire, which on a virtual disk
// is most of a hand-off between processes (about 1 ms after an idle moment,
// where a whole flock(1) hand-off takes 2 ms).
//
// Instead a token is epoch<<epochShift plus a count. Before its first
// acquisition each Driver takes a new epoch from a counter in the database
// (zerotal_lock_epoch), in a commit that is synced, and a takeover's token is
// max(previous token + 1, epoch<<epochShift). Every token a Driver returns
// lies below (E+1)<<epochShift for an epoch E that is on disk: after a
// power loss no earlier Driver survives, every new one takes an epoch above
// E, and its tokens start above every token handed out before. A token
// beyond the range of the Driver's own epoch (the key was last taken under a
// newer epoch, or 2^epochShift takeovers of one key under this one) is
// returned only after the Driver has taken a new epoch above the token's,
// synced. So tokens only increase, as with a synced counter, and the disk
// is synced once per Driver instead of twice per lock cycle.

// epochShift is where the epoch starts in a token: 2^24 takeovers of one key
// under one epoch before a Driver needs a new one.
const epochShift = 24

// maxEpoch keeps tokens below 2^53, so that runtimes whose numbers are
// doubles (JavaScript) read them exactly: 2^29 epochs, one per Driver that
// acquires.
const maxEpoch = 1<<(53-epochShift) - 1

// createEpochTable holds the epoch counter, in one row.
const createEpochTable = `CREATE TABLE IF NOT EXISTS zerotal_lock_epoch (
	id    INTEGER PRIMARY KEY CHECK (id = 0),
	epoch INTEGER NOT NULL
)`

// sqlNextEpoch takes an epoch above both the last one taken and ?1.
const sqlNextEpoch = `INSERT INTO zerotal_lock_epoch (id, epoch) VALUES (0, ?1 + 1)
ON CONFLICT (id) DO UPDATE SET epoch = max(epoch, ?1) + 1
RETURNING epoch`

// errTokenRange is returned by an acquire when the database's fencing tokens
// have run out of range: about 5·10^8 Drivers have acquired on it. Tokens
// cannot start again from 1 without breaking their promise, so the database
// file must be replaced, once nothing remembers its tokens.
var errTokenRange = errors.New("sqlite lock driver: fencing tokens out of range (2^53); replace the database file")

// tokenBase returns the smallest token this Driver may hand out, taking the
// Driver's first epoch when it has none yet.
func (d *Driver) tokenBase(ctx context.Context) (int64, error) {
	if e := d.epoch.Load(); e != 0 {
		return e << epochShift, nil
	}
	if err := d.nextEpoch(ctx, 0); err != nil {
		return 0, err
	}
	return d.epoch.Load() << epochShift, nil
}

// coverToken makes sure that token is below the range of an epoch on disk,
// taking a new epoch when the token lies beyond this Driver's.
func (d *Driver) coverToken(ctx context.Context, token int64) error {
	if token>>epochShift <= d.epoch.Load() {
		return nil
	}
	return d.nextEpoch(ctx, token>>epochShift)
}

// nextEpoch takes an epoch above floor and above every epoch taken before,
// in a synced commit, and makes it this Driver's. Drivers of one process
// take turns; once a Driver has its first epoch, a concurrent first caller
// takes none of its own.
func (d *Driver) nextEpoch(ctx context.Context, floor int64) error {
	d.epochMu.Lock()
	defer d.epochMu.Unlock()
	current := d.epoch.Load()
	if current != 0 && floor < current {
		return nil // another caller covered it while this one waited
	}
	var r busyRetry
	for {
		epoch, err := d.syncedEpoch(ctx, floor)
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return err
			}
			if epoch > maxEpoch {
				return errTokenRange
			}
			d.epoch.Store(epoch)
			return nil
		}
	}
}

// syncedEpoch runs sqlNextEpoch with synchronous=FULL on a connection of its
// own for the moment, so that the new epoch is on disk when it returns. The
// connection goes back to NORMAL after; should that fail, it stays FULL,
// which is only slower.
func (d *Driver) syncedEpoch(ctx context.Context, floor int64) (int64, error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
		return 0, err
	}
	// Not cancellable: the statement commits as its rows close, and a
	// cancel there would have database/sql close them first and drop the
	// commit's error (an fsync that failed). It waits at most for SQLite's
	// busy timeout and one sync.
	var epoch int64
	err = conn.QueryRowContext(context.WithoutCancel(ctx), sqlNextEpoch, floor).Scan(&epoch)
	restore, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_, _ = conn.ExecContext(restore, "PRAGMA synchronous = NORMAL")
	if err != nil {
		return 0, fmt.Errorf("take a fencing epoch: %w", err)
	}
	return epoch, nil
}
