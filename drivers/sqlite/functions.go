package sqlite

import (
	sqldriver "database/sql/driver"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// holderGoneFunc is the SQL function through which statements ask whether a
// row's holder process has exited. Its name is prefixed because modernc
// registers functions for every connection of the process.
const holderGoneFunc = "zerotal_lock_holder_gone"

// noteTokenFunc is the SQL function through which the acquire statement hands
// the token it wrote to its caller; see acquireSQL.
const noteTokenFunc = "zerotal_lock_note_token"

// nowFunc() and expiryFunc(ttl) read the wall clock while a statement runs,
// in Unix nanoseconds: now, and now + ttl saturated. SQLite takes the write
// lock at the start of a statement, before any row is read, so a guard such
// as "expires_ns > nowFunc()" compares against the time the statement holds
// the database, not a time read before the call waited in database/sql's
// connection queue and in SQLite's busy handler. A clock read before that
// wait would let Release and Extend act on a lease that lapsed meanwhile.
// Both are registered as non-deterministic so SQLite calls them each time.
const (
	nowFunc    = "zerotal_lock_now"
	expiryFunc = "zerotal_lock_expiry"
)

var (
	registerOnce sync.Once
	errRegister  error
)

// registerFunctions makes the functions above available to the
// connections modernc opens from now on. Registration is process-wide, hence
// once.
func registerFunctions() error {
	registerOnce.Do(func() {
		errRegister = sqlite.RegisterScalarFunction(holderGoneFunc, 2,
			func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
				pid, ok1 := args[0].(int64)
				start, ok2 := args[1].(int64)
				if ok1 && ok2 && holderGone(pid, start) {
					return int64(1), nil
				}
				return int64(0), nil
			})
		if errRegister == nil {
			errRegister = sqlite.RegisterScalarFunction(noteTokenFunc, 2,
				func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
					return noteToken(args)
				})
		}
		if errRegister == nil {
			errRegister = sqlite.RegisterScalarFunction(nowFunc, 0,
				func(*sqlite.FunctionContext, []sqldriver.Value) (sqldriver.Value, error) {
					return time.Now().UnixNano(), nil
				})
		}
		if errRegister == nil {
			errRegister = sqlite.RegisterScalarFunction(expiryFunc, 1,
				func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
					ttl, _ := args[0].(int64) // the driver always binds an int64
					return expiry(time.Now().UnixNano(), time.Duration(ttl)), nil
				})
		}
	})
	return errRegister
}
