package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zerotal/lock/core/driver"
	lock "github.com/zerotal/lock/sdk/go"
)

// inspectTimeout bounds one holder lookup. It is also how long the first
// call of a command waits for an unreachable backend before lockctl calls it
// a configuration error.
const inspectTimeout = 10 * time.Second

// lookupHolder asks the backend who holds l's key. A driver that cannot
// describe holders gives known false and no error: callers then say less.
func lookupHolder(ctx context.Context, l *lock.ManagedLock) (h driver.Holder, held, known bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	h, held, err = l.Holder(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		return driver.Holder{}, false, false, nil
	}
	return h, held, err == nil, err
}

// holderText describes a holder in a few words for messages, such as
// "pid 4242 on web-1 since 14:03:07, token 7"; only what the driver
// recorded is shown.
func holderText(h driver.Holder, now time.Time) string {
	var parts []string
	switch {
	case h.PID != 0 && h.Host != "":
		parts = append(parts, fmt.Sprintf("pid %d on %s", h.PID, sanitize(h.Host)))
	case h.PID != 0:
		parts = append(parts, fmt.Sprintf("pid %d", h.PID))
	case h.Host != "":
		parts = append(parts, "a process on "+sanitize(h.Host))
	}
	if !h.AcquiredAt.IsZero() {
		parts = append(parts, "since "+clock(h.AcquiredAt, now))
	}
	text := strings.Join(parts, " ")
	if text == "" {
		text = "another owner"
	}
	if h.Token != 0 {
		text += fmt.Sprintf(", token %d", h.Token)
	}
	return text
}

// clock formats t for a reader at now: the time of day when t is today,
// with the date otherwise.
func clock(t, now time.Time) string {
	t = t.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

// sanitize replaces control characters, which could move the cursor or
// break a line of output, with '?'. Keys and host names are arbitrary
// strings.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
