package redis

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zerotal/lock/core/driver"
)

// parseHolder decodes inspectScript's reply: owner, token, acquired (server
// ms), pid, host, PTTL (ms) and the server's time as seconds and
// microseconds. Fields another writer left empty decode as unknown.
func parseHolder(reply []any) (driver.Holder, error) {
	if len(reply) != 8 {
		return driver.Holder{}, fmt.Errorf("unexpected reply of %d elements", len(reply))
	}
	var f [8]string
	for i, v := range reply {
		switch v := v.(type) {
		case string:
			f[i] = v
		case int64:
			f[i] = strconv.FormatInt(v, 10)
		case nil:
		default:
			return driver.Holder{}, fmt.Errorf("unexpected reply element %d of type %T", i, v)
		}
	}
	h := driver.Holder{Owner: f[0], Host: f[4]}
	h.Token, _ = strconv.ParseUint(f[1], 10, 64)
	if ms, err := strconv.ParseInt(f[2], 10, 64); err == nil {
		h.AcquiredAt = time.UnixMilli(ms)
	}
	h.PID, _ = strconv.Atoi(f[3])
	pttl, err1 := strconv.ParseInt(f[5], 10, 64)
	sec, err2 := strconv.ParseInt(f[6], 10, 64)
	usec, err3 := strconv.ParseInt(f[7], 10, 64)
	if err1 == nil && err2 == nil && err3 == nil && pttl >= 0 {
		h.ExpiresAt = time.Unix(sec, usec*int64(time.Microsecond)).Add(time.Duration(pttl) * time.Millisecond)
	}
	return h, nil
}
