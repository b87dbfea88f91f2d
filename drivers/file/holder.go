package file

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/zerotal/lock/driver/process"
)

// holderRecord is the JSON content of lease entry 0: who took the lock. The
// lease entries' names are what the protocol runs on; this record only lets a
// process on the same host tell that the holder has died, and lets Inspect
// and a person reading the directory see who holds it.
type holderRecord struct {
	Owner    string `json:"owner"`
	PID      int    `json:"pid"`
	PIDStart uint64 `json:"pid_start,omitempty"` // clock ticks after boot; 0 when unknown
	Host     string `json:"host"`
	// Scope names the boot, pid namespace and time namespace PID belongs
	// to: a pid means the same process only to a reader in the same scope.
	Scope        string `json:"pid_scope,omitempty"`
	AcquiredAtNS int64  `json:"acquired_at_ns"` // wall clock, Unix nanoseconds
	ExpiresAtNS  int64  `json:"expires_at_ns"`  // the lease at acquisition
}

// recordPrefix returns the JSON of the parts of a holder record that are the
// same for every lock p takes, without the closing brace, so that writing a
// record per acquisition is appending three fields.
func recordPrefix(p process.Identity) []byte {
	b, err := json.Marshal(struct {
		PID      int    `json:"pid"`
		PIDStart uint64 `json:"pid_start,omitempty"`
		Host     string `json:"host"`
		Scope    string `json:"pid_scope,omitempty"`
	}{p.PID, p.Start, p.Host, p.Scope})
	if err != nil {
		// Marshalling ints and strings cannot fail; an empty prefix
		// would only make records unreadable, which reads as stale.
		return []byte("{")
	}
	return b[:len(b)-1]
}

// appendRecord appends the holder record of one acquisition to b. owner has
// passed validOwner, so it needs no JSON escaping.
func appendRecord(b, prefix []byte, owner string, acquired, expires int64) []byte {
	b = append(b, prefix...)
	if len(prefix) > 1 {
		b = append(b, ',')
	}
	b = append(b, `"owner":"`...)
	b = append(b, owner...)
	b = append(b, `","acquired_at_ns":`...)
	b = strconv.AppendInt(b, acquired, 10)
	b = append(b, `,"expires_at_ns":`...)
	b = strconv.AppendInt(b, expires, 10)
	return append(b, '}')
}

// maxRecord bounds what is read of a holder record: a few hundred bytes make
// one, and anything longer is not one.
const maxRecord = 64 << 10

// errNotRecord reports an entry 0 that is no holder record at all: a
// symbolic link, a directory, or too long. Like a record that does not
// parse, it makes the lock stale.
var errNotRecord = errors.New("not a holder record")

// errBadRecord reports a holder record that does not describe a holder.
var errBadRecord = errors.New("holder record has no owner or pid")

// parseRecord decodes a holder record. An error means the metadata is
// unreadable, which makes the lock stale.
func parseRecord(b []byte) (holderRecord, error) {
	var r holderRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return holderRecord{}, err
	}
	if r.Owner == "" || r.PID <= 0 {
		return holderRecord{}, errBadRecord
	}
	return r, nil
}

// holderGone reports whether r's process has certainly exited. Only a holder
// in this process's host, boot, pid namespace and time namespace can be
// judged; every other
// holder counts as alive and frees its lock by lease expiry alone. A wrong
// "alive" only makes a waiter wait for the lease; a wrong "gone" would break
// mutual exclusion, so everything uncertain reads as alive.
func holderGone(r holderRecord) bool {
	me := process.Self()
	if me.Scope == "" || r.Scope != me.Scope || r.Host != me.Host {
		return false
	}
	return process.Exited(r.PID, r.PIDStart)
}
