package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock/driver"
)

// ErrClosed is returned by every method of a Driver after Close.
var ErrClosed = errors.New("postgres: driver is closed")

// errNoPool is returned by every method of a Driver made by New with a nil
// pool.
var errNoPool = errors.New("postgres: driver has no pool (New was given nil)")

// errBadOwner is returned for an owner that is empty or has a space: the
// hand-off notice separates its fields with spaces, and a released row has
// the empty owner. The engine's owners are 32 hex digits.
var errBadOwner = errors.New("postgres: owner is empty or contains a space")

// The capabilities the engine discovers by type assertion.
var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Fencer    = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
)

// Driver is a lock backend on one PostgreSQL database, reached through a
// pgx pool. It implements [driver.Driver], [driver.Extender],
// [driver.Fencer], [driver.Inspector] and [driver.Waiter]. It is safe for
// concurrent use.
type Driver struct {
	pool     *pgxpool.Pool
	ownsPool bool  // Open made pool, so Close closes it
	err      error // a bad option: every call returns it

	table    table
	sql      statements
	pid      int32  // recorded as the holder's pid
	host     string // recorded as the holder's host
	waitPoll time.Duration
	liveness int64 // µs a waiter's poll keeps it live

	// The schema is created on the first call that needs it.
	migrateMu sync.Mutex
	migrated  atomic.Bool

	notices listener

	closing   chan struct{} // closed by Close, to wake waiters
	closed    atomic.Bool
	closeOnce sync.Once

	// AcquireWait calls running, and the background give-backs (the leaves
	// of waits that ended without the key, the releases of acquires cut
	// short): Close lets both finish, within bounds, before it closes the
	// pool. cleanupMu orders starting either against Close's waits for
	// them.
	cleanupMu    sync.Mutex
	waits        int
	waitsIdle    chan struct{}  // made by Close while waits > 0; closed when they end
	waitsClosed  bool           // Close has begun: start no more waits
	leaves       sync.WaitGroup // the give-backs running
	leavesClosed bool           // Close is past waiting for give-backs: start no more
	leavesCtx    context.Context
	leavesStop   context.CancelFunc
}

// New returns a Driver on a pool the caller already has. Close does not
// close pool; the caller still owns it. The lock table is created on the
// first call (see [WithTable]). The pool's sessions should run with
// PostgreSQL's defaults synchronous_commit=on and READ COMMITTED, which
// [Open] sets: see the package documentation.
func New(pool *pgxpool.Pool, opts ...Option) *Driver {
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	host, _ := os.Hostname() // an unknown host is recorded as ""
	d := &Driver{
		pool:     pool,
		pid:      int32(os.Getpid()),
		host:     host,
		waitPoll: cfg.waitPoll,
		liveness: (livenessPolls * cfg.waitPoll).Microseconds(),
		closing:  make(chan struct{}),
	}
	d.leavesCtx, d.leavesStop = context.WithCancel(context.Background())
	t, err := parseTable(cfg.table)
	switch {
	case err != nil:
		d.err = err
	case pool == nil:
		d.err = errNoPool
	default:
		d.table, d.sql = t, newStatements(t)
	}
	var cc *pgx.ConnConfig
	if d.err == nil {
		cc = pool.Config().ConnConfig
	}
	d.notices.init(cc, noticeChannelPrefix+randomID())
	return d
}

// Table returns the lock table's name, "schema.table".
func (d *Driver) Table() string { return d.table.String() }

// Acquire takes key for owner for ttl, or resets the TTL if owner holds it
// already, in one statement. A free key that waiters queued for goes to the
// first of them, not to Acquire.
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	token, err := d.acquire(ctx, key, owner, ttl)
	return token != 0, err
}

// AcquireFenced is Acquire that also returns the acquisition's fencing
// token: see the package documentation for how tokens are made.
func (d *Driver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	token, err := d.acquire(ctx, key, owner, ttl)
	return token, token != 0, err
}

func (d *Driver) acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.readyFor(ctx, owner); err != nil {
		return 0, d.fail(ctx, "acquire", err)
	}
	var token int64
	inFlight, err := d.change(ctx, d.sql.acquire, []any{key, owner, ttlMicros(ttl), d.pid, d.host}, &token)
	if err != nil {
		if inFlight != 0 {
			// It may yet take the key for owner, whom nobody will
			// release: release it once the statement is over.
			d.giveBack(inFlight, func(ctx context.Context) error {
				var released bool
				return d.queryRow(ctx, d.sql.release, []any{key, owner}, &released)
			})
		}
		return 0, d.fail(ctx, "acquire", err)
	}
	if token < 0 {
		return 0, fmt.Errorf("postgres: acquire: server returned token %d", token)
	}
	return uint64(token), nil
}

// Release frees key if owner holds it, handing it to the first queued
// waiter if there is one, in one statement. The row stays, marked free, to
// keep the key's last fencing token.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.readyFor(ctx, owner); err != nil {
		return false, d.fail(ctx, "release", err)
	}
	var ok bool
	if err := d.queryRow(ctx, d.sql.release, []any{key, owner}, &ok); err != nil {
		return false, d.fail(ctx, "release", err)
	}
	return ok, nil
}

// Extend sets key's expiry to ttl from now, by the server's clock, if owner
// holds it; it never takes a free key.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.readyFor(ctx, owner); err != nil {
		return false, d.fail(ctx, "extend", err)
	}
	tag, err := d.exec(ctx, d.sql.extend, key, owner, ttlMicros(ttl))
	if err != nil {
		return false, d.fail(ctx, "extend", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ForceRelease frees key whoever holds it, handing it to the first queued
// waiter if there is one.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.ready(ctx); err != nil {
		return d.fail(ctx, "force release", err)
	}
	if _, err := d.exec(ctx, d.sql.forceRelease, key); err != nil {
		return d.fail(ctx, "force release", err)
	}
	return nil
}

// Exists reports whether key is held, judged by the server's clock.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.ready(ctx); err != nil {
		return false, d.fail(ctx, "exists", err)
	}
	var held bool
	if err := d.queryRow(ctx, d.sql.exists, []any{key}, &held); err != nil {
		return false, d.fail(ctx, "exists", err)
	}
	return held, nil
}

// Inspect returns key's live holder in one statement. AcquiredAt and
// ExpiresAt are the server's clock; PID and Host are the holding process's.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if err := d.ready(ctx); err != nil {
		return driver.Holder{}, false, d.fail(ctx, "inspect", err)
	}
	var (
		h     driver.Holder
		token int64
		pid   int32
	)
	err := d.queryRow(ctx, d.sql.inspect, []any{key}, &h.Owner, &token, &h.AcquiredAt, &h.ExpiresAt, &pid, &h.Host)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.Holder{}, false, nil
	}
	if err != nil {
		return driver.Holder{}, false, d.fail(ctx, "inspect", err)
	}
	h.Token, h.PID = uint64(max(token, 0)), int(pid)
	return h, true, nil
}

// Close wakes every waiter (their AcquireWait returns ErrClosed) and waits,
// up to closeWaitBound, for them to return, and as long again for them to
// leave the queue, so that a key handed to one meanwhile is passed on rather
// than held by nobody for its TTL. It then stops the notice listener and, if
// Open made the pool, closes it. Locks still held stay until their TTL.
// Close is idempotent and returns nil.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.closing)
		d.cleanupMu.Lock()
		d.waitsClosed = true
		var idle chan struct{}
		if d.waits > 0 {
			idle = make(chan struct{})
			d.waitsIdle = idle
		}
		d.cleanupMu.Unlock()
		if idle != nil {
			waitBounded(idle, closeWaitBound)
		}
		d.notices.close()
		d.cleanupMu.Lock()
		d.leavesClosed = true
		d.cleanupMu.Unlock()
		left := make(chan struct{})
		go func() {
			d.leaves.Wait()
			close(left)
		}()
		waitBounded(left, closeWaitBound)
		d.leavesStop()
		<-left
		if d.ownsPool {
			d.pool.Close()
		}
	})
	return nil
}

// waitBounded waits until ch closes or bound passes.
func waitBounded(ch <-chan struct{}, bound time.Duration) {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// usable returns the error a call must give before it reaches the server.
func (d *Driver) usable(ctx context.Context) error {
	switch {
	case d.closed.Load():
		return ErrClosed
	case d.err != nil:
		return d.err
	}
	return ctx.Err()
}

// ready checks that a call may go to the server, and creates the schema if
// this is the Driver's first call.
func (d *Driver) ready(ctx context.Context) error {
	if err := d.usable(ctx); err != nil {
		return err
	}
	return d.ensureSchema(ctx)
}

// readyFor is ready for a call that names an owner.
func (d *Driver) readyFor(ctx context.Context, owner string) error {
	if owner == "" || strings.IndexByte(owner, ' ') >= 0 {
		return errBadOwner
	}
	return d.ready(ctx)
}

// queryRow runs a one-row query, once more if the first attempt failed
// before anything was sent (pgconn.SafeToRetry) or on a session the server
// had ended (after a restart or a pg_terminate_backend, the pooled
// connection's first reply is the server's notice of that). Any other
// failure after the statement was sent is returned as it is: the statement
// may have run.
func (d *Driver) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	_, err := d.change(ctx, sql, args, dest...)
	return err
}

// change is queryRow for a statement that may take a key, which also
// returns, when it fails with its outcome unknown, the pid of the backend
// that may still be running it; 0 when the statement surely did not run or
// has ended. A statement cut short by its ctx is not stopped on the server:
// pgx drops the connection, and the backend runs the statement to its
// commit before it notices. What such a statement took must be given back
// after it has finished, not before (see giveBack).
func (d *Driver) change(ctx context.Context, sql string, args []any, dest ...any) (inFlight uint32, err error) {
	for attempt := 0; ; attempt++ {
		c, err := d.pool.Acquire(ctx)
		if err != nil {
			return 0, err // no connection: nothing was sent
		}
		pid := c.Conn().PgConn().PID()
		err = c.QueryRow(ctx, sql, args...).Scan(dest...)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			c.Release()
			return 0, nil
		case attempt == 0 && ctx.Err() == nil && (pgconn.SafeToRetry(err) || sessionEnded(err)):
			c.Release()
			continue
		case pgconn.SafeToRetry(err), errors.As(err, &pgErr), errors.Is(err, pgx.ErrNoRows):
			// Never sent, or the server answered: an error rolled
			// the statement back.
			c.Release()
			return 0, err
		default:
			// Make sure the connection is closed (pgx closes it when
			// ctx ends mid-statement), so that the backend exits once
			// the statement is over: settle waits for that.
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.Conn().Close(cctx)
			cancel()
			c.Release()
			return pid, err
		}
	}
}

// sessionEnded reports whether err is the server's notice that it ended the
// session (pg_terminate_backend, a shutdown): the statement did not run, or
// was rolled back with the session, so it may be sent again on another
// connection.
func sessionEnded(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03")
}

// exec is queryRow for a statement whose rows are not read.
func (d *Driver) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.pool.Exec(ctx, sql, args...)
	if err != nil && (pgconn.SafeToRetry(err) || sessionEnded(err)) && ctx.Err() == nil {
		tag, err = d.pool.Exec(ctx, sql, args...)
	}
	return tag, err
}

// fail wraps a failed call's error so that errors.Is finds ctx.Err() when
// ctx ended and ErrClosed when the driver was closed meanwhile. A missing
// table or function (dropped under the driver) makes the next call create
// the schema again.
func (d *Driver) fail(ctx context.Context, op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "42883") {
		d.migrated.Store(false)
	}
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, errNoPool), errors.Is(err, ErrBadTable), errors.Is(err, errBadOwner):
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("postgres: %s: %w (%w)", op, ctxErr, err)
	}
	if d.closed.Load() {
		return fmt.Errorf("postgres: %s: %w (%w)", op, ErrClosed, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// ttlMicros converts ttl to whole microseconds, rounding up so the server
// never keeps a lock for less than the caller asked.
func ttlMicros(ttl time.Duration) int64 {
	return max(int64((ttl+time.Microsecond-1)/time.Microsecond), 1)
}
