package sqlite

import (
	"database/sql/driver"
	"sync"
	"sync/atomic"
)

// notedTokens carries each acquire statement's new token from noteTokenFunc,
// which SQLite calls while the statement runs, to the AcquireFenced call that
// ran it. Keys are acquisition ids, unique in the process, so any number of
// drivers and connections can acquire at once.
var (
	notedTokens    sync.Map // acquisition id (int64) -> token (int64)
	acquisitionIDs atomic.Int64
)

// noteToken implements noteTokenFunc(id, token): it records token for the
// acquisition id and returns token, to be stored in the row. A NULL id (a
// statement run outside AcquireFenced) records nothing.
func noteToken(args []driver.Value) (driver.Value, error) {
	id, ok := args[0].(int64)
	if ok {
		notedTokens.Store(id, args[1])
	}
	return args[1], nil
}

// takeNotedToken removes and returns what noteToken recorded for id.
func takeNotedToken(id int64) (token int64, noted bool) {
	v, ok := notedTokens.LoadAndDelete(id)
	if !ok {
		return 0, false
	}
	token, ok = v.(int64)
	return token, ok
}
