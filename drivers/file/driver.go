package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/driver/process"
	"github.com/zerotal/lock/driver/waitq"
)

// ErrClosed is returned by every method of a Driver after Close.
var ErrClosed = errors.New("file: driver closed")

const (
	// acquireAttempts bounds how often one Acquire looks and publishes: a
	// publish fails when another publisher gets in between the look and the
	// rename. Anything still in the way after that is contention, reported
	// as false.
	acquireAttempts = 3
	// renewAttempts bounds Extend's retries when another call for the same
	// owner renewed at the same moment.
	renewAttempts = 3
	// lookAttempts bounds how often a look retries a lock directory that
	// was retired between being opened and being listed.
	lookAttempts = 3
)

// Compile-time checks of the capabilities the driver offers. It does not
// implement driver.Fencer: see the package documentation.
var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
	_ driver.Notifier  = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
)

// Driver is a lock driver on one lock directory. It is safe for concurrent
// use; between calls it holds no goroutines or timers, and no open files but
// the held file of each key it holds that someone waits for (see wait.go).
type Driver struct {
	dir    string // absolute
	topic  string // dir with symlinks resolved: names its notices
	record []byte // the holder record's per-process part; see recordPrefix

	mu     sync.Mutex // guards subs, and closed against Subscribe
	closed atomic.Bool
	subs   map[*subscription]struct{}

	// life ends at Close, which ends the waits in progress.
	life    context.Context
	endLife context.CancelFunc
	held    waitq.Holds // the held files kept open (see wait.go)
	waiting waitq.Waits // its AcquireWait calls in flight, which Close awaits
}

// Open returns a driver on the lock directory dir, creating it (mode 0755
// before the umask: only this user may take locks in it, until an
// administrator shares it) when it is missing. It fails at once when dir
// cannot be used: empty, not a directory, or not writable (checked by
// creating and removing an entry, which also catches read-only mounts and
// access control beyond the mode bits). It deletes pending directories that
// crashed processes left behind long ago.
func Open(dir string) (*Driver, error) {
	if dir == "" {
		return nil, errors.New("file: Open: dir is empty: name the directory that holds the locks")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("file: Open: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("file: Open: lock directory: %w", err)
	}
	probe := abs + string(os.PathSeparator) + randomName(pendingPrefix)
	if err := os.Mkdir(probe, dirPerm); err != nil {
		return nil, fmt.Errorf("file: Open: lock directory %s is not writable: %w", abs, err)
	}
	if err := syscall.Rmdir(probe); err != nil {
		return nil, fmt.Errorf("file: Open: lock directory %s: cannot remove entries: %w", abs, &fs.PathError{Op: "rmdir", Path: probe, Err: err})
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		resolved = abs
	}
	sweep(abs, time.Now())
	d := &Driver{
		dir:    abs,
		topic:  resolved,
		record: recordPrefix(process.Self()),
		subs:   make(map[*subscription]struct{}),
	}
	d.life, d.endLife = context.WithCancel(context.Background())
	return d, nil
}

// begin checks what every call needs: an open driver and a live ctx.
func (d *Driver) begin(ctx context.Context) error {
	if d.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// checkOwner rejects an owner that cannot be part of a file name. The engine
// never passes one; a driver still must not misbehave on it.
func checkOwner(owner string) error {
	if !validOwner(owner) {
		return fmt.Errorf("file: owner %q: want 1 to %d characters from [A-Za-z0-9_-]", owner, maxOwnerLen)
	}
	return nil
}

// checkTTL rejects a TTL below driver.MinTTL, which the engine never passes.
func checkTTL(ttl time.Duration) error {
	if ttl < driver.MinTTL {
		return fmt.Errorf("file: ttl %v is below the minimum %v", ttl, driver.MinTTL)
	}
	return nil
}

// leaseEnd returns now+ttl in Unix nanoseconds, or the latest instant that
// Unix nanoseconds can hold (in 2262) when the sum overflows: a TTL too long
// to represent is a lease that does not end, never one that ended long ago.
func leaseEnd(now time.Time, ttl time.Duration) int64 {
	n := now.UnixNano()
	if n > math.MaxInt64-int64(ttl) {
		return math.MaxInt64
	}
	return n + int64(ttl)
}

// Acquire implements driver.Driver. It looks before it builds: on a held key
// it costs an open and a listing, on a free key a failed open, a mkdir, a
// file write and a rename (and a failed open of the key's held file, or,
// when someone waits for the key, an open kept until the release).
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	ok, err := d.acquire(ctx, key, owner, ttl)
	if ok && err == nil {
		d.held.Keep(d.room(key), key, owner)
	}
	return ok, err
}

// acquire is Acquire without the held file.
func (d *Driver) acquire(ctx context.Context, key, owner string, ttl time.Duration) (ok bool, err error) {
	if err := d.begin(ctx); err != nil {
		return false, err
	}
	if err := errors.Join(checkOwner(owner), checkTTL(ttl)); err != nil {
		return false, err
	}
	path := lockPath(d.dir, key)
	var p *pending
	defer func() {
		if p == nil {
			return
		}
		// A pending directory that cannot be removed is garbage that a
		// later Open sweeps; it is worth an error only when there is no
		// lock to report instead.
		if derr := p.discard(); derr != nil && err == nil && !ok {
			err = fmt.Errorf("file: acquire: remove pending lock directory: %w", derr)
		}
	}()
	for range acquireAttempts {
		o, err := contendAt(path, owner, ttl)
		if err != nil {
			return false, fmt.Errorf("file: acquire: %w", err)
		}
		switch o {
		case refused:
			return false, nil
		case taken:
			return true, nil
		}
		if p == nil {
			now := time.Now()
			expires := leaseEnd(now, ttl)
			var buf [512]byte
			if p, err = build(d.dir, appendRecord(buf[:0], d.record, owner, now.UnixNano(), expires), owner, expires); err != nil {
				return false, fmt.Errorf("file: acquire: %w", err)
			}
		}
		if ok, err := p.publish(path); ok || err != nil {
			if err != nil {
				err = fmt.Errorf("file: acquire: %w", err)
			}
			return ok, err
		}
		// Another publisher got in between the look and the rename:
		// look again.
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// outcome is what a look at a lock's name decided.
type outcome int

const (
	refused outcome = iota // a live lock of another owner: false
	taken                  // owner's own live lock, lease reset: true
	vacant                 // free, stale and cleared, or raced: publish
)

// contendAt looks at the lock directory at path, if any; see contend.
func contendAt(path, owner string, ttl time.Duration) (outcome, error) {
	l, err := openLockDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return vacant, nil
	}
	if err != nil {
		return refused, err
	}
	defer l.close()
	return contend(l, owner, ttl)
}

// contend decides about the lock l in the way: owner's own live lock gets a
// fresh lease, another's live lock refuses, a stale one is cleared for the
// publish that follows.
func contend(l *lockDir, owner string, ttl time.Duration) (outcome, error) {
	s, err := l.list()
	if errors.Is(err, fs.ErrNotExist) {
		return vacant, nil // retired or replaced since it was opened
	}
	if err != nil {
		return refused, err
	}
	now := time.Now()
	if n, ok := s.newest(); ok && n.owner == owner && n.expires > now.UnixNano() {
		err := l.renew(s, n, owner, leaseEnd(now, ttl))
		switch {
		case err == nil:
			return taken, nil
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist):
			return vacant, nil
		default:
			return refused, err
		}
	}
	held, _, err := l.assess(s, now.UnixNano())
	if err != nil || held {
		return refused, err
	}
	if _, err := l.clear(s); err != nil {
		return refused, err
	}
	return vacant, nil
}

// Release implements driver.Driver; see lockdir.go for why the owner guard
// holds under concurrency.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.begin(ctx); err != nil {
		return false, err
	}
	if err := checkOwner(owner); err != nil {
		return false, err
	}
	return d.release(key, owner)
}

// release is Release of a valid owner without the closed check: a wait that
// Close ended gives back what its last try took while Close waits for it
// (see AcquireWait).
func (d *Driver) release(key, owner string) (bool, error) {
	l, s, err := d.look(key)
	if l == nil || err != nil {
		if err == nil {
			d.held.Forget(key, owner) // lost: owner holds it no more
		}
		return false, err
	}
	defer l.close()
	n, ok := s.newest()
	if !ok || n.owner != owner || n.expires <= time.Now().UnixNano() {
		d.held.Forget(key, owner)
		return false, nil
	}
	released, err := l.clear(s)
	if err == nil && released {
		err = l.retire()
	}
	if err != nil {
		return false, fmt.Errorf("file: release: %w", err)
	}
	if released {
		d.held.Released(d.room(key), key, owner)
		notify(d.topic, key)
	}
	return released, nil
}

// ForceRelease implements driver.Driver.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.begin(ctx); err != nil {
		return err
	}
	l, s, err := d.look(key)
	if l == nil || err != nil {
		return err
	}
	defer l.close()
	if _, err := l.clear(s); err != nil {
		return fmt.Errorf("file: force release: %w", err)
	}
	if err := l.retire(); err != nil {
		return fmt.Errorf("file: force release: %w", err)
	}
	d.held.Released(d.room(key), key, "")
	notify(d.topic, key)
	return nil
}

// Extend implements driver.Extender: a new lease entry in the directory the
// owner's lease was seen in, which fails once that directory is retired or
// replaced. It never creates a lock.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.begin(ctx); err != nil {
		return false, err
	}
	if err := errors.Join(checkOwner(owner), checkTTL(ttl)); err != nil {
		return false, err
	}
	l, s, err := d.look(key)
	if l == nil || err != nil {
		return false, err
	}
	defer l.close()
	for range renewAttempts {
		now := time.Now()
		n, ok := s.newest()
		if !ok || n.owner != owner || n.expires <= now.UnixNano() {
			return false, nil
		}
		err := l.renew(s, n, owner, leaseEnd(now, ttl))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case !errors.Is(err, fs.ErrExist):
			return false, fmt.Errorf("file: extend: %w", err)
		}
		s, err = l.list()
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // retired or replaced: the lock is lost
		}
		if err != nil {
			return false, fmt.Errorf("file: extend: %w", err)
		}
	}
	return false, nil
}

// Exists implements driver.Driver: a lock whose lease has passed, whose
// metadata is unreadable or whose holder is a dead local process is not held.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	_, held, err := d.inspect(ctx, key)
	return held, err
}

// Inspect implements driver.Inspector. Token is always 0. PID, Host and
// AcquiredAt come from the holder record and are zero when it is missing.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	return d.inspect(ctx, key)
}

// inspect is Exists and Inspect.
func (d *Driver) inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if err := d.begin(ctx); err != nil {
		return driver.Holder{}, false, err
	}
	l, s, err := d.look(key)
	if l == nil || err != nil {
		return driver.Holder{}, false, err
	}
	defer l.close()
	held, rec, err := l.assess(s, time.Now().UnixNano())
	if err != nil {
		return driver.Holder{}, false, fmt.Errorf("file: inspect: %w", err)
	}
	if !held {
		return driver.Holder{}, false, nil
	}
	n, _ := s.newest()
	h := driver.Holder{Owner: n.owner, ExpiresAt: time.Unix(0, n.expires)}
	if rec.PID != 0 {
		h.PID, h.Host, h.AcquiredAt = rec.PID, rec.Host, time.Unix(0, rec.AcquiredAtNS)
	}
	return h, true, nil
}

// look opens and lists key's lock directory; l is nil when there is none.
// A directory retired between the open and the listing is looked up again:
// its name may already hold a newer lock.
func (d *Driver) look(key string) (*lockDir, snapshot, error) {
	path := lockPath(d.dir, key)
	for range lookAttempts {
		l, err := openLockDir(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, snapshot{}, nil
		}
		if err != nil {
			return nil, snapshot{}, fmt.Errorf("file: %w", err)
		}
		s, err := l.list()
		if err == nil {
			return l, s, nil
		}
		l.close()
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, snapshot{}, fmt.Errorf("file: %w", err)
		}
	}
	// Retired again and again: the key is changing hands right now, and
	// was free at each of those moments.
	return nil, snapshot{}, nil
}

// Close implements driver.Driver. It ends the driver's subscriptions; locks
// still held stay held until released by another driver or their lease ends.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return nil
	}
	d.closed.Store(true)
	subs := d.subs
	d.subs = nil
	d.mu.Unlock()
	d.endLife()
	d.waiting.Close() // the waits that endLife ended give back and leave
	d.held.Close()
	for s := range subs {
		s.end(false)
	}
	return nil
}
