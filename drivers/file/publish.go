package file

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// pendingMaxAge is how old a pending directory must be before a sweep
	// deletes it. Building and publishing one takes microseconds; only a
	// process that died (or was stopped for this long) between the two leaves
	// one this old. A stopped process that resumes finds its pending directory
	// gone and its Acquire fails with an error: it never publishes a
	// half-deleted lock, because the sweep renames a pending directory away
	// before deleting it.
	pendingMaxAge = time.Hour
	// buildAttempts bounds retries when a random pending name is taken.
	buildAttempts = 4
	// dirPerm and filePerm are the modes of what the driver creates inside
	// the lock directory, before the umask. Reclaiming another process's
	// stale lock needs write permission on its lock directory, so processes
	// of several users sharing a lock directory need group-writable
	// directories: a umask of 002 and a shared group give them that. Never
	// world-writable, whatever the umask.
	dirPerm  = 0o775
	filePerm = 0o644
)

// pending is a lock directory under construction: created under a random
// pending name next to the lock, holding its lease entry 0, not yet published.
type pending struct {
	path      string
	entry     string // path of lease entry 0 inside
	published bool
}

// randomName returns prefix followed by 16 random hex digits.
func randomName(prefix string) string {
	var buf [32]byte
	b := append(buf[:0], prefix...)
	b = strconv.AppendUint(b, rand.Uint64()|1<<63, 16)
	return string(b)
}

// build creates a pending lock directory for owner in dir, with the holder
// record written to lease entry 0.
func build(dir string, record []byte, owner string, expires int64) (*pending, error) {
	for range buildAttempts {
		path := dir + string(os.PathSeparator) + randomName(pendingPrefix)
		err := os.Mkdir(path, dirPerm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p := &pending{path: path, entry: path + string(os.PathSeparator) + leaseName(0, expires, owner)}
		if err := writeNew(p.entry, record); err != nil {
			_ = p.discard()
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("mkdir %s: %d random pending names taken", dir, buildAttempts)
}

// publish renames the pending directory onto target and reports whether it
// became the lock. false means target holds a non-empty directory: a lock,
// live or stale. syscall.Rename, not os.Rename: os.Rename refuses any
// existing directory, and replacing an empty one is what lets a reclaimer
// commit (rule 2 in lockdir.go).
func (p *pending) publish(target string) (bool, error) {
	err := syscall.Rename(p.path, target)
	switch {
	case err == nil:
		p.published = true
		return true, nil
	case errors.Is(err, fs.ErrExist): // EEXIST or ENOTEMPTY
		return false, nil
	case errors.Is(err, syscall.ENOTDIR):
		return false, fmt.Errorf("%s exists and is not a directory: remove it or use another lock directory", target)
	case errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("rename %s: pending lock directory vanished (swept after %v?) or lock directory removed: %w", p.path, pendingMaxAge, err)
	default:
		return false, &os.LinkError{Op: "rename", Old: p.path, New: target, Err: err}
	}
}

// discard deletes the pending directory unless it was published. Every path
// through Acquire calls it, so no pending directory outlives its call.
func (p *pending) discard() error {
	if p.published {
		return nil
	}
	if err := os.Remove(p.entry); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(p.path)
	}
	if err := syscall.Rmdir(p.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(p.path)
	}
	return nil
}

// sweep deletes pending directories older than pendingMaxAge, left by
// processes that died between building and publishing, and finishes sweeps
// that died midway. It claims a pending directory by renaming it to a sweep
// name first: if its builder publishes at the same moment, exactly one rename
// wins, so a sweep never deletes entries of a directory that is being
// published. Best effort: a failure leaves garbage, never breaks a lock.
func sweep(dir string, now time.Time) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	for {
		// In batches: the lock directory may hold a great many locks.
		names, err := f.Readdirnames(256)
		for _, name := range names {
			path := dir + string(os.PathSeparator) + name
			switch {
			case strings.HasPrefix(name, sweepPrefix):
				_ = os.RemoveAll(path)
			case strings.HasPrefix(name, pendingPrefix):
				fi, err := os.Lstat(path)
				if err != nil || now.Sub(fi.ModTime()) < pendingMaxAge {
					continue
				}
				claim := dir + string(os.PathSeparator) + randomName(sweepPrefix)
				if syscall.Rename(path, claim) == nil {
					_ = os.RemoveAll(claim)
				}
			}
		}
		if err != nil {
			return
		}
	}
}
