package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zerotal/lock/driver"
	lock "github.com/zerotal/lock/sdk/go"
	"golang.org/x/term"
)

// How often the waiting line is redrawn, and how often it asks the backend
// who holds the key: the elapsed time should tick smoothly, but a lookup
// costs a round trip, and holders change rarely.
const (
	waitLineRedraw = 250 * time.Millisecond
	waitLineLookup = time.Second
)

// waitLine is the live line on a terminal that shows, while lockctl waits
// for a lock, how long it has waited and who holds the key. It rewrites one
// line with \r, and erases it when the wait ends, so that the command's own
// output starts on a clean line.
type waitLine struct {
	out    io.Writer
	width  func() int // the terminal's width in columns, 0 if unknown
	key    string
	lock   *lock.ManagedLock // a handle on the key, for holder lookups
	start  time.Time
	cancel context.CancelFunc // ends a lookup in flight when the line stops
	done   chan struct{}
	drawn  int // runes on the line now
}

// startWaitLine starts the line on f if f is a terminal, and returns nil
// otherwise: redirected output (a log file, cron mail) gets no line.
func startWaitLine(f *os.File, key string, l *lock.ManagedLock, start time.Time) *waitLine {
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return nil
	}
	width := func() int {
		w, _, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return w
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &waitLine{out: f, width: width, key: key, lock: l, start: start, cancel: cancel, done: make(chan struct{})}
	go w.loop(ctx)
	return w
}

func (w *waitLine) loop(ctx context.Context) {
	defer close(w.done)
	defer w.erase()
	redraw := time.NewTicker(waitLineRedraw)
	defer redraw.Stop()
	var (
		h          driver.Holder
		held       bool
		known      bool
		lastLookup time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-redraw.C:
		}
		if time.Since(lastLookup) >= waitLineLookup {
			var err error
			h, held, known, err = lookupHolder(ctx, w.lock)
			if ctx.Err() != nil {
				return
			}
			known = known && err == nil
			lastLookup = time.Now()
		}
		now := time.Now()
		w.draw(waitLineText(w.key, now.Sub(w.start), h, held, known, now))
	}
}

// stop erases the line and returns once nothing more will be written. It
// may be called on a nil line and more than once.
func (w *waitLine) stop() {
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
}

// draw replaces the line with text, cut to the terminal's width: a line
// that wrapped could no longer be rewritten with \r.
func (w *waitLine) draw(text string) {
	r := []rune(text)
	if cols := w.width(); cols > 1 && len(r) > cols-1 {
		r = r[:cols-1]
	}
	pad := max(w.drawn-len(r), 0)
	fmt.Fprintf(w.out, "\r%s%s", string(r), strings.Repeat(" ", pad))
	w.drawn = len(r)
}

// erase blanks the line and puts the cursor back at its start.
func (w *waitLine) erase() {
	if w.drawn > 0 {
		fmt.Fprintf(w.out, "\r%s\r", strings.Repeat(" ", w.drawn))
		w.drawn = 0
	}
}

// waitLineText is the line's text after waiting for waited: who holds the
// key, when known.
func waitLineText(key string, waited time.Duration, h driver.Holder, held, known bool, now time.Time) string {
	text := fmt.Sprintf("lockctl: waiting %s for %q", waitedText(waited), key)
	switch {
	case !known:
	case held:
		text += ": held by " + holderText(h, now)
	default:
		text += ": free, taking it"
	}
	return text
}

// waitedText shows a wait to the tenth of a second while that still
// matters, then to the second.
func waitedText(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}
