//go:build unix

package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zerotal/lock/driver"
)

// fileDriver is a test-only backend that spans processes, so that the kit's
// crash test can kill a real holder: every call takes an flock on dir/lock
// (which the kernel drops when a holder process dies), reads the whole table
// from dir/state.json, and writes it back by rename when it changed. Expiry
// is on the wall clock, which every process shares. It favours being obviously
// right over being fast.
type fileDriver struct {
	dir          string
	neverExpires bool // the deliberate bug TestBrokenDrivers uses
	closed       atomic.Bool
}

var (
	_ driver.Driver    = (*fileDriver)(nil)
	_ driver.Extender  = (*fileDriver)(nil)
	_ driver.Fencer    = (*fileDriver)(nil)
	_ driver.Inspector = (*fileDriver)(nil)
)

var errFileClosed = errors.New("filedriver: closed")

// fileState is the table in state.json.
type fileState struct {
	Minted uint64               `json:"minted"` // the backend-wide token counter
	Locks  map[string]*fileLock `json:"locks"`
}

type fileLock struct {
	Owner    string `json:"owner"`
	Token    uint64 `json:"token"`
	PID      int    `json:"pid"`
	Acquired int64  `json:"acquired"` // unix nanoseconds
	Expires  int64  `json:"expires"`  // unix nanoseconds
}

// live reports whether l is a lock still held at now.
func (d *fileDriver) live(l *fileLock, now time.Time) bool {
	return l != nil && (d.neverExpires || now.UnixNano() < l.Expires)
}

// update runs fn on the table under the file lock, and stores the table if
// fn reports that it changed it.
func (d *fileDriver) update(ctx context.Context, fn func(s *fileState, now time.Time) (changed bool)) error {
	if d.closed.Load() {
		return errFileClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(d.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() // drops the flock
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	s := fileState{Locks: make(map[string]*fileLock)}
	path := filepath.Join(d.dir, "state.json")
	switch data, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
	}
	now := time.Now()
	if !fn(&s, now) {
		return nil
	}
	for key, l := range s.Locks {
		if !d.live(l, now) {
			delete(s.Locks, key) // the counter keeps tokens increasing
		}
	}
	data, err := json.Marshal(&s)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (d *fileDriver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := d.AcquireFenced(ctx, key, owner, ttl)
	return ok, err
}

func (d *fileDriver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (token uint64, ok bool, err error) {
	err = d.update(ctx, func(s *fileState, now time.Time) bool {
		l := s.Locks[key]
		if d.live(l, now) && l.Owner != owner {
			return false
		}
		if !d.live(l, now) {
			s.Minted++
			l = &fileLock{Owner: owner, Token: s.Minted, PID: os.Getpid(), Acquired: now.UnixNano()}
			s.Locks[key] = l
		}
		l.Expires = now.Add(ttl).UnixNano()
		token, ok = l.Token, true
		return true
	})
	return token, ok, err
}

func (d *fileDriver) Release(ctx context.Context, key, owner string) (ok bool, err error) {
	err = d.update(ctx, func(s *fileState, now time.Time) bool {
		if l := s.Locks[key]; d.live(l, now) && l.Owner == owner {
			delete(s.Locks, key)
			ok = true
		}
		return ok
	})
	return ok, err
}

func (d *fileDriver) ForceRelease(ctx context.Context, key string) error {
	return d.update(ctx, func(s *fileState, _ time.Time) bool {
		_, held := s.Locks[key]
		delete(s.Locks, key)
		return held
	})
}

func (d *fileDriver) Exists(ctx context.Context, key string) (held bool, err error) {
	err = d.update(ctx, func(s *fileState, now time.Time) bool {
		held = d.live(s.Locks[key], now)
		return false
	})
	return held, err
}

func (d *fileDriver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (ok bool, err error) {
	err = d.update(ctx, func(s *fileState, now time.Time) bool {
		if l := s.Locks[key]; d.live(l, now) && l.Owner == owner {
			l.Expires = now.Add(ttl).UnixNano()
			ok = true
		}
		return ok
	})
	return ok, err
}

func (d *fileDriver) Inspect(ctx context.Context, key string) (h driver.Holder, held bool, err error) {
	err = d.update(ctx, func(s *fileState, now time.Time) bool {
		if l := s.Locks[key]; d.live(l, now) {
			h = driver.Holder{
				Owner: l.Owner, Token: l.Token, PID: l.PID,
				AcquiredAt: time.Unix(0, l.Acquired), ExpiresAt: time.Unix(0, l.Expires),
			}
			held = true
		}
		return false
	})
	return h, held, err
}

func (d *fileDriver) Close() error {
	d.closed.Store(true)
	return nil
}
