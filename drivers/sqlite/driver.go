package sqlite

import (
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/zerotal/lock/core/driver"
)

// ErrClosed is returned by every method of a Driver after Close.
var ErrClosed = errors.New("sqlite lock driver: closed")

// Driver keeps locks in one SQLite database. It is safe for concurrent use,
// and any number of Drivers, in this process or others of the host, may share
// one database file.
type Driver struct {
	path   string // as given to Open, for error messages
	db     *sql.DB
	self   holderProcess
	hub    *hub
	hubKey string // the hub's key in the registry; "" for a private hub

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
)

// Close closes the database. Locks still held stay in the file until their
// TTL passes (or, on Linux, until a waiter sees that this process has exited).
// Close is idempotent: later calls return nil.
func (d *Driver) Close() error {
	first := false
	d.closeOnce.Do(func() {
		first = true
		d.closed.Store(true)
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
