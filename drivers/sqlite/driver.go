package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/driver/process"
	"github.com/zerotal/lock/driver/waitq"
)

// ErrClosed is returned by every method of a Driver after Close.
var ErrClosed = errors.New("sqlite lock driver: closed")

// Driver keeps locks in one SQLite database. It is safe for concurrent use,
// and any number of Drivers, in this process or others of the host, may share
// one database file.
type Driver struct {
	path   string // as given to Open, for error messages
	db     *sql.DB
	self   process.Identity
	hub    *hub
	hubKey string // the hub's key in the registry; "" for a private hub
	waits  string // the directory of the wait rooms; "" for a private database

	// life ends at Close, which ends the waits in progress.
	life    context.Context
	endLife context.CancelFunc
	held    waitq.Holds // the held files this Driver keeps open (see wait.go)
	waiting waitq.Waits // its AcquireWait calls in flight, which Close awaits

	// epoch is this Driver's fencing epoch, 0 until its first acquire
	// takes one (epoch.go); epochMu orders the Driver's takers.
	epoch   atomic.Int64
	epochMu sync.Mutex

	acquireStmt, releaseStmt, extendStmt, forceStmt, existsStmt, inspectStmt *sql.Stmt

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Fencer    = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
	_ driver.Notifier  = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
)

// Close closes the database. Locks still held stay in the file until their
// TTL passes (or, on Linux, until a waiter sees that this process has exited).
// Close is idempotent: later calls return nil.
func (d *Driver) Close() error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		d.closed.Store(true)
		d.endLife()
		// The waits that endLife ended give back what their last try
		// took before the statements and the database close.
		d.waiting.Close()
		d.held.Close()
		d.closeStatements()
		d.closeErr = d.db.Close()
		if d.hubKey != "" {
			releaseHub(d.hubKey, d.hub)
		}
	})
	if !first {
		return nil
	}
	return d.closeErr
}

// closeStatements finalises the prepared statements that exist.
func (d *Driver) closeStatements() {
	for _, s := range []*sql.Stmt{d.acquireStmt, d.releaseStmt, d.extendStmt, d.forceStmt, d.existsStmt, d.inspectStmt} {
		if s != nil {
			_ = s.Close() // closing the database below reports what matters
		}
	}
}
