package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

func TestWaitLineText(t *testing.T) {
	now := time.Date(2026, 3, 4, 15, 0, 0, 0, time.Local)
	h := driver.Holder{PID: 4242, Host: "web-1", Token: 7, AcquiredAt: now.Add(-90 * time.Second)}
	for _, tc := range []struct {
		name        string
		waited      time.Duration
		h           driver.Holder
		held, known bool
		want        string
	}{
		{"held", 3200 * time.Millisecond, h, true, true, `lockctl: waiting 3.2s for "k": held by pid 4242 on web-1 since 14:58:30, token 7`},
		{"long wait", 125*time.Second + 600*time.Millisecond, h, true, true, `lockctl: waiting 2m5s for "k": held by pid 4242 on web-1 since 14:58:30, token 7`},
		{"free between attempts", time.Second, driver.Holder{}, false, true, `lockctl: waiting 1.0s for "k": free, taking it`},
		{"holder unknown", time.Second, driver.Holder{}, false, false, `lockctl: waiting 1.0s for "k"`},
		{"driver records little", 0, driver.Holder{Owner: "abc"}, true, true, `lockctl: waiting 0.0s for "k": held by another owner`},
		{"host with a newline", 0, driver.Holder{Host: "evil\nhost"}, true, true, `lockctl: waiting 0.0s for "k": held by a process on "evil\nhost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitLineText("k", tc.waited, tc.h, tc.held, tc.known, now); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHolderTextShowsTheDateOfAnOldLock(t *testing.T) {
	now := time.Date(2026, 3, 4, 15, 0, 0, 0, time.Local)
	got := holderText(driver.Holder{PID: 1, AcquiredAt: now.AddDate(0, 0, -1)}, now)
	if want := "pid 1 since 2026-03-03 15:00:00"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWaitLineDrawFitsTheTerminal(t *testing.T) {
	var out bytes.Buffer
	w := &waitLine{out: &out, width: func() int { return 20 }}
	w.draw(strings.Repeat("x", 50))
	w.draw("short")
	w.erase()
	want := "\r" + strings.Repeat("x", 19) + // cut to width-1, so the line never wraps
		"\rshort" + strings.Repeat(" ", 14) + // padded over the longer line
		"\r     \r" // blanked, cursor at the start
	if got := out.String(); got != want {
		t.Errorf("drew %q\nwant %q", got, want)
	}
}
