package redis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zerotal/lock/driver"
)

// parseHolder decodes inspectScript's reply: the lock's value (a flag byte,
// then owner, token, pid and host, one a line), its PTTL in ms and the
// server's time as seconds and microseconds. Fields that do not parse decode
// as unknown. The token is the server's time of the grant in microseconds
// unless the server's clock had gone back behind the key's last token; then
// AcquiredAt reads as the server's time of the inspection at the latest.
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
	fields := strings.SplitN(value, "\n", 4)
	fields = append(fields, make([]string, 4-len(fields))...)
	h.Owner, h.Host = fields[0], fields[3]
	h.Token, _ = strconv.ParseUint(fields[1], 10, 64)
	h.PID, _ = strconv.Atoi(fields[2])
	pttl, err1 := strconv.ParseInt(f[1], 10, 64)
	sec, err2 := strconv.ParseInt(f[2], 10, 64)
	usec, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 == nil && err2 == nil && err3 == nil && pttl >= 0 {
		now := time.Unix(sec, usec*int64(time.Microsecond))
		h.ExpiresAt = now.Add(time.Duration(pttl) * time.Millisecond)
		if h.Token != 0 && h.Token <= uint64(now.UnixMicro()) {
			h.AcquiredAt = time.UnixMicro(int64(h.Token))
		} else if h.Token != 0 {
			h.AcquiredAt = now
		}
	}
	return h, nil
}
