package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/driver"
)

// ErrClosed is returned by every method of a Driver after Close.
var ErrClosed = errors.New("etcd: driver is closed")

// errNoClient is returned by every method of a Driver made by New with a nil
// client.
var errNoClient = errors.New("etcd: driver has no client (New was given nil)")

// The capabilities the engine discovers by type assertion.
var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Fencer    = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
)

// Driver is a lock backend on one etcd cluster, reached through an etcd v3
// client. It implements [driver.Driver], [driver.Extender], [driver.Fencer],
// [driver.Inspector] and [driver.Waiter]. It is safe for concurrent use.
type Driver struct {
	client     *clientv3.Client
	ownsClient bool // Open made client, so Close closes it

	// The driver's own views of the client's connection: its own watcher
	// and lessor, so that Close stops their goroutines whoever owns the
	// client, and the raw lease API, which lets the driver choose lease
	// ids (see lease.go).
	kv      clientv3.KV
	watcher clientv3.Watcher
	lessor  clientv3.Lease
	leases  pb.LeaseClient

	prefix     string
	opTimeout  time.Duration
	waiterSecs int64  // the waiter lease's TTL, whole seconds
	holder     string // "\n" pid "\n" host: the end of every value written

	closing   chan struct{} // closed by Close, to wake waiters and stop retries
	closed    atomic.Bool
	closeOnce sync.Once

	bg      background
	waiters waiterLease
	pool    leasePool

	// AcquireWait calls running, which Close lets clean up before it
	// stops the background tasks and closes the client.
	waitsMu   sync.Mutex
	waits     int
	waitsDone bool          // Close has begun waiting: start no more
	waitsIdle chan struct{} // made by Close while waits > 0; closed when they end
}

// New returns a Driver on a client the caller already has. Close does not
// close c; the caller still owns it.
//
// The Driver uses c's connection through its own KV, watcher and lessor:
// wrappers installed on c (a namespace, say) do not apply, so use
// [WithPrefix] to place the keys.
func New(c *clientv3.Client, opts ...Option) *Driver {
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	waiterSecs, err := ttlSeconds(cfg.waiterTTL)
	if err != nil {
		waiterSecs, _ = ttlSeconds(DefaultWaiterTTL)
	}
	d := &Driver{
		client:     c,
		prefix:     cfg.prefix,
		opTimeout:  cfg.opTimeout,
		waiterSecs: waiterSecs,
		holder:     holderInfo(),
		closing:    make(chan struct{}),
	}
	d.bg.init()
	d.waiters.init()
	if c != nil {
		d.kv = clientv3.NewKV(c)
		d.watcher = clientv3.NewWatcher(c)
		d.lessor = clientv3.NewLease(c)
		d.leases = pb.NewLeaseClient(c.ActiveConnection())
	}
	return d
}

// Close wakes every waiter (their AcquireWait returns ErrClosed) and waits,
// up to a bound, for them to return; revokes the Driver's waiter lease,
// which deletes the queue keys left on it; waits, up to a bound, for the
// background clean-up (the waiters' leaving, lease revocations, among them
// the leases kept for reuse); stops the Driver's watcher and lessor and, if
// Open made the client, closes it. It returns the client's close error the
// first time and nil after that. Locks still held stay until their TTL.
func (d *Driver) Close() error {
	var err error
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.closing)
		if d.client == nil {
			d.bg.cancel()
			return
		}
		d.waitForWaits(d.opTimeout + closeSlack)
		d.waiters.close(d)
		for _, id := range d.pool.drain() {
			d.revokeLater(id)
		}
		d.bg.stop(d.opTimeout)
		_ = d.watcher.Close()
		_ = d.lessor.Close()
		if d.ownsClient {
			err = d.client.Close()
		}
	})
	return err
}

// usable returns the error a call must give before it reaches the server.
func (d *Driver) usable(ctx context.Context) error {
	switch {
	case d.closed.Load():
		return ErrClosed
	case d.client == nil:
		return errNoClient
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}

// usableFor is usable for a call on key for owner, which also checks what
// the key layout and the owner guard rely on (the engine never passes
// either).
func (d *Driver) usableFor(ctx context.Context, key, owner string) error {
	switch {
	case strings.IndexByte(key, 0) >= 0:
		return errKeyNUL
	case strings.IndexByte(owner, '\n') >= 0:
		return errOwnerNewline
	}
	return d.usable(ctx)
}

// The errors of usableFor.
var (
	errKeyNUL       = errors.New("etcd: key contains a NUL byte")
	errOwnerNewline = errors.New("etcd: owner contains a newline")
)

// fail wraps a failed call's error so that errors.Is finds ctx.Err() when ctx
// ended and ErrClosed when the driver was closed meanwhile.
func (d *Driver) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("etcd: %s: %w (%w)", op, ctxErr, err)
	}
	if d.closed.Load() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("etcd: %s: %w (%w)", op, ErrClosed, err)
	}
	return fmt.Errorf("etcd: %s: %w", op, err)
}
