package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's own busy handler (PRAGMA busy_timeout) waits out short write
// locks inside a statement; these bound the retries of whole statements
// beyond it. The backoff is jittered so that many processes that failed
// together do not all try again in the same instant.
const (
	busyTimeoutMS  = 50
	firstBackoff   = 500 * time.Microsecond
	maxBackoff     = 16 * time.Millisecond
	maxBusyWaiting = 30 * time.Second
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

// busyRetry paces the re-execution of one statement while the database is
// busy. The zero value is ready to use.
type busyRetry struct {
	started time.Time
	backoff time.Duration
}

// again reports whether the statement that failed with err should run again.
// When it should not, it returns the error for the caller: nil after success,
// ctx's error once ctx has ended (a statement interrupted by a cancelled ctx
// fails with SQLITE_INTERRUPT, which the caller should see as ctx.Err()), and
// otherwise err itself, the busy error included once the database has stayed
// locked for maxBusyWaiting, which bounds waits under context.Background.
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
	now := time.Now()
	if r.started.IsZero() {
		r.started, r.backoff = now, firstBackoff
	}
	if now.Sub(r.started) >= maxBusyWaiting {
		return false, fmt.Errorf("database stayed locked for %v: %w", maxBusyWaiting, err)
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
