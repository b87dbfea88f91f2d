package redis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zerotal/lock/core/driver"
)

// parseHolder decodes inspectScript's reply: the lock's value (a flag byte,
// then owner, token, acquired in server ms, pid and host, one a line), its
// PTTL in ms and the server's time as seconds and microseconds. Fields that
// do not parse decode as unknown.
func parseHolder(reply []any) (driver.Holder, error) {
	if len(reply) != 4 {
		return driver.Holder{}, fmt.Errorf("unexpected reply of %d elements", len(reply))
	}
	var f [4]string
	for i, v := range reply {
		switch v := v.(type) {
		case string:
			f[i] = v
		case int64:
			f[i] = strconv.FormatInt(v, 10)
		default:
			return driver.Holder{}, fmt.Errorf("unexpected reply element %d of type %T", i, v)
		}
	}
	var h driver.Holder
	value := f[0]
	if value != "" {
		value = value[1:] // the queue flag
	}
	fields := strings.SplitN(value, "\n", 5)
	fields = append(fields, make([]string, 5-len(fields))...)
	h.Owner, h.Host = fields[0], fields[4]
	h.Token, _ = strconv.ParseUint(fields[1], 10, 64)
	if ms, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
		h.AcquiredAt = time.UnixMilli(ms)
	}
	h.PID, _ = strconv.Atoi(fields[3])
	pttl, err1 := strconv.ParseInt(f[1], 10, 64)
	sec, err2 := strconv.ParseInt(f[2], 10, 64)
	usec, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 == nil && err2 == nil && err3 == nil && pttl >= 0 {
		h.ExpiresAt = time.Unix(sec, usec*int64(time.Microsecond)).Add(time.Duration(pttl) * time.Millisecond)
	}
	return h, nil
}
