package file

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"
)

// How a lock directory changes hands, and why it is race-free.
//
// A lock is the directory <dir>/<lock name> holding lease entries named
// "lease.<seq>.<expires ns>.<owner>". Entry 0 carries the holder's JSON
// record and is written before the directory is published; Extend adds entry
// seq+1 as an empty file and prunes older extensions. The entry with the
// highest seq is the current lease. The rules everything rests on:
//
//  1. A lock directory is built under a pending name and published complete
//     by rename(2), which fails with EEXIST/ENOTEMPTY if the lock name holds
//     a non-empty directory. Of several publishers exactly one wins.
//  2. rename(2) and rmdir(2) replace or remove a directory only while it is
//     empty, and the kernel checks that under the directory's inode lock, the
//     same lock that creating an entry in it takes. Creating an entry in a
//     directory that has been replaced or removed fails with ENOENT.
//  3. A published lock directory is never renamed away. It leaves its name
//     only empty: replaced by the next publisher or removed by rmdir. An
//     empty lock directory is a free key.
//  4. Entry names are immutable: created once (O_EXCL), removed once. All
//     entries of one lock directory name one owner, its publisher: only that
//     owner adds entries, and only after seeing that the newest is its own.
//  5. Every operation on an existing lock goes through one descriptor of the
//     directory it looked at (a dirHandle), never through the path again, so
//     what it removes or adds is in the directory it judged, even when the
//     name has meanwhile been given to a newer lock.
//
// Reclaiming a stale lock: list it, judge the listing (no lease entry, newest
// lease expired, holder record unreadable, or holder a dead local process),
// remove exactly the listed entries, lease 0 last, then rename the new
// lock's pending directory onto the name. That rename is the commit point: it
// succeeds only if the old directory is empty at that instant.
//   - Two reclaimers: both remove the same names (the second unlink of a
//     name fails with ENOENT, which is ignored); one rename wins; the other
//     fails because the winner's directory is not empty, and on its next
//     look the loser sees a live lock and gives up.
//   - The holder extends meanwhile: its new entry is not in the reclaimer's
//     listing, so the reclaimer leaves it alone. Created before the
//     reclaimer's rename, it keeps the directory non-empty and the rename
//     fails: the holder keeps the lock with its new lease. Created after, it
//     lands in a directory already replaced and fails with ENOENT: Extend
//     reports false. Rule 2 rules out a third outcome.
//   - The holder is a dead process: by rule 4 every entry is its own, and it
//     adds none any more, so removing them all is safe. The start-time check
//     keeps a live process that reuses the pid from being taken for it.
//   - A listing that is out of date (another process changed the directory
//     since, or an NFS client cache served it) only makes the reclaimer
//     remove less than is there, and then its rename fails: it can lose
//     because of it, never win.
//
// There is deliberately no "rename the stale lock to a tombstone, check it,
// put it back if it was not stale": while a live lock sits under the
// tombstone name its key looks free, a third process can publish onto it, and
// the put-back then fails with two holders. Here nothing is ever moved out of
// a lock's name, and a reclaimer removes only entries it judged stale.
//
// Releasing (owner-guarded): list; go on only if the newest lease is the
// caller's and unexpired; remove the listed entries, lease 0 last. Removing
// the last lease entry frees the key, and Release reports true only if its own
// unlink of that entry succeeded: ENOENT means someone removed it first (a
// ForceRelease, or a reclaimer once the lease had passed), so the lock was no
// longer the caller's to release. A non-owner never passes the check, and by rule 4 the
// entries of a directory whose newest lease is another owner's are all that
// owner's, so a non-owner never removes any part of a live lock. Then rmdir
// retires the empty directory. ENOTEMPTY means either that an Extend by the
// same owner added an entry meanwhile (the descriptor still names the
// directory at the path: empty it again, a bounded number of times) or that
// the name already holds a newer lock (ours is gone: done). rmdir can only
// ever remove an empty, hence free, directory, so it needs no guard.
// ForceRelease is the same without the owner check.
//
// A process that dies midway leaves a pending directory (swept by Open when
// old), a lock directory missing some entries (lease 0 goes last, so the
// holder record survives for the dead-process check), or an empty directory:
// all of them read as stale or free.

// retirePasses bounds how often Release and ForceRelease empty a lock
// directory that a concurrent Extend keeps refilling.
const retirePasses = 8

// lockDir is one lock directory, opened once so that every step works on the
// directory that was judged (rule 5).
type lockDir struct {
	path string
	dir  *dirHandle
}

// openLockDir opens the lock directory at path; a missing one gives an error
// matching fs.ErrNotExist.
func openLockDir(path string) (*lockDir, error) {
	h, err := openDir(path)
	if err != nil {
		return nil, err
	}
	return &lockDir{path: path, dir: h}, nil
}

// close releases the directory descriptor.
func (l *lockDir) close() { l.dir.close() }

// snapshot is one listing of a lock directory.
type snapshot struct {
	leases []lease  // by seq, ascending
	other  []string // names that are not lease entries: left by something else
}

// newest returns the current lease: the entry with the highest seq.
func (s snapshot) newest() (lease, bool) {
	if len(s.leases) == 0 {
		return lease{}, false
	}
	return s.leases[len(s.leases)-1], true
}

// list reads the directory's entries. Listing a directory that has been
// retired or replaced fails with an error matching fs.ErrNotExist.
func (l *lockDir) list() (snapshot, error) {
	names, err := l.dir.names()
	if err != nil {
		return snapshot{}, err
	}
	var s snapshot
	for _, name := range names {
		if ls, ok := parseLease(name); ok {
			s.leases = append(s.leases, ls)
		} else {
			s.other = append(s.other, name)
		}
	}
	if len(s.leases) > 1 {
		slices.SortFunc(s.leases, func(a, b lease) int {
			if a.seq != b.seq {
				if a.seq < b.seq {
					return -1
				}
				return 1
			}
			return strings.Compare(a.name, b.name)
		})
	}
	return s, nil
}

// assess reports whether s describes a live lock at now (Unix ns): its newest
// lease unexpired, its holder record readable and not a dead local process.
// It returns the holder record when it read one.
func (l *lockDir) assess(s snapshot, now int64) (held bool, rec holderRecord, err error) {
	n, ok := s.newest()
	if !ok || n.expires <= now {
		return false, holderRecord{}, nil
	}
	first := s.leases[0]
	if first.seq != 0 {
		// Entry 0 is gone but a newer lease is live: a reclaim that
		// lost to the holder's Extend removed it. The holder stays
		// unknown, and the lease alone decides.
		return true, holderRecord{}, nil
	}
	b, err := l.dir.readFile(first.name)
	if errors.Is(err, fs.ErrNotExist) {
		// Someone is emptying the directory right now; until it is
		// empty, it still holds a live lease.
		return true, holderRecord{}, nil
	}
	if errors.Is(err, errNotRecord) {
		return false, holderRecord{}, nil // unreadable metadata
	}
	if err != nil {
		// An I/O error, or too many open files, says nothing about the
		// holder: calling the lock stale on it could free a live one.
		return false, holderRecord{}, err
	}
	rec, err = parseRecord(b)
	if err != nil || rec.Owner != first.owner || holderGone(rec) {
		return false, holderRecord{}, nil
	}
	return true, rec, nil
}

// renew adds the lease entry after n, s's newest, for owner until expires,
// then prunes the extensions s listed. The error matches fs.ErrNotExist when
// the directory has been retired or replaced (the lock is lost) and
// fs.ErrExist when a concurrent call for the same owner renewed first.
func (l *lockDir) renew(s snapshot, n lease, owner string, expires int64) error {
	if err := l.dir.create(leaseName(n.seq+1, expires, owner)); err != nil {
		return err
	}
	for _, old := range s.leases {
		if old.seq > 0 {
			// Best effort: a leftover extension is harmless, the
			// newest entry decides, and Release removes it.
			_ = l.dir.remove(old.name)
		}
	}
	return nil
}

// clear removes the entries of s, lease 0 last, and reports whether this call
// removed the last lease entry itself (the moment the key frees). Entries
// already gone are skipped: someone else is clearing too.
func (l *lockDir) clear(s snapshot) (removedLast bool, err error) {
	for _, name := range s.other {
		if err := l.dir.remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	zeros := 0
	for zeros < len(s.leases) && s.leases[zeros].seq == 0 {
		zeros++
	}
	order := append(s.leases[zeros:len(s.leases):len(s.leases)], s.leases[:zeros]...)
	for i, ls := range order {
		err := l.dir.remove(ls.name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		removedLast = i == len(order)-1 && err == nil
	}
	return removedLast, nil
}

// retire removes the lock directory once cleared, emptying it again while a
// concurrent Extend by the same owner refills it.
func (l *lockDir) retire() error {
	for range retirePasses {
		err := syscall.Rmdir(l.path)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return &fs.PathError{Op: "rmdir", Path: l.path, Err: err}
		}
		if at, err := l.isAt(); err != nil || !at {
			// A newer lock owns the name: ours is already gone.
			return err
		}
		s, err := l.list()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // retired by someone else meanwhile
		}
		if err != nil {
			return err
		}
		if _, err := l.clear(s); err != nil {
			return err
		}
	}
	return fmt.Errorf("rmdir %s: entries keep appearing", l.path)
}

// isAt reports whether the lock directory's path still names this directory.
func (l *lockDir) isAt() (bool, error) { return l.dir.sameAs(l.path) }
