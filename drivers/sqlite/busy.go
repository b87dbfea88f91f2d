package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's own busy handler (PRAGMA busy_timeout) waits out short write
// locks inside a statement; beyond it, whole statements are run again after
// a backoff. The backoff is jittered so that many processes that failed
// together do not all try again in the same instant. There is no cap on the
// total wait: a busy database is not a failure, and the caller's ctx says
// how long it is willing to wait (a driver that gave up on its own would
// hand SQLITE_BUSY to a caller whose ctx still allowed a retry).
const (
	busyTimeoutMS = 50
	firstBackoff  = 500 * time.Microsecond
	maxBackoff    = 16 * time.Millisecond
)

// isBusy reports whether err means "another connection holds a lock the
// statement needs": SQLITE_BUSY or SQLITE_LOCKED with any extended code.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// readOnlyError is SQLITE_READONLY, typed: errors.Is(err, fs.ErrPermission)
// holds for it, so that a caller tells a store it may not write (a file or
// directory without write permission for this user, a read-only mount) from
// other failures without reading SQLite's message.
type readOnlyError struct{ err error }

func (e readOnlyError) Error() string   { return e.err.Error() }
func (e readOnlyError) Unwrap() []error { return []error{e.err, fs.ErrPermission} }

// typed returns err with the meaning callers match on made explicit: a
// SQLITE_READONLY error becomes a readOnlyError; anything else is returned
// as it is.
func typed(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_READONLY {
		return readOnlyError{err}
	}
	return err
}

// busyRetry paces the re-execution of one statement while the database is
// busy. The zero value is ready to use.
type busyRetry struct {
	backoff time.Duration
}

// again reports whether the statement that failed with err should run again.
// When it should not, it returns the error for the caller: nil after success,
// ctx's error once ctx has ended (a statement interrupted by a cancelled ctx
// fails with SQLITE_INTERRUPT, which the caller should see as ctx.Err()), and
// err itself when it is not a busy error. A busy error never comes back: the
// statement is retried for as long as ctx lasts, which under a ctx without
// deadline or cancellation is until the database is free.
func (r *busyRetry) again(ctx context.Context, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	if !isBusy(err) {
		return false, err
	}
	if r.backoff == 0 {
		r.backoff = firstBackoff
	}
	wait := r.backoff/2 + rand.N(r.backoff)
	r.backoff = min(2*r.backoff, maxBackoff)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return true, nil
	}
}
