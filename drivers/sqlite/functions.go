package sqlite

import (
	sqldriver "database/sql/driver"
	"sync"

	"modernc.org/sqlite"
)

// holderGoneFunc is the SQL function through which statements ask whether a
// row's holder process has exited. Its name is prefixed because modernc
// registers functions for every connection of the process.
const holderGoneFunc = "zerotal_lock_holder_gone"

// noteTokenFunc is the SQL function through which the acquire statement hands
// the token it wrote to its caller; see acquireSQL.
const noteTokenFunc = "zerotal_lock_note_token"

var (
	registerOnce sync.Once
	errRegister  error
)

// registerFunctions makes holderGoneFunc and noteTokenFunc available to the
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
	})
	return errRegister
}
