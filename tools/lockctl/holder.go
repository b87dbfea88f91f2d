package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/zerotal/lock/driver"
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
		parts = append(parts, fmt.Sprintf("pid %d on %s", h.PID, display(h.Host)))
	case h.PID != 0:
		parts = append(parts, fmt.Sprintf("pid %d", h.PID))
	case h.Host != "":
		parts = append(parts, "a process on "+display(h.Host))
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

// display shows a string that came from the backend (a key, a host name, an
// owner) or from the command line, as text safe for a terminal: as it is
// when every character is a printable one other than space and '"', quoted
// with Go's escapes otherwise. Anyone who can write to a shared Redis or
// lock database chooses these strings, and a control character (C0 or C1,
// such as the CSI that starts escape sequences), a bidi override or a line
// break would let them move the cursor, set a window title or disguise a
// key on another user's terminal.
func display(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r == ' ' || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
