package waitq

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Event bits a watcher reports.
const (
	evHeld   = 1 << iota // the held file was closed: a release, or a holder died
	evTicket             // a ticket ahead left or its owner died, or events were lost
)

// watcher reports, through inotify, the closes and removals in a room that
// may let its waiter move up or take the key. A nil watcher reports nothing
// (Wait then polls).
type watcher struct {
	f    *os.File
	ch   chan struct{}
	bits atomic.Uint32 // pending event bits, cleared by events
	mine atomic.Pointer[string]
	done sync.WaitGroup
}

// watch starts watching room; nil when inotify cannot be used (for instance
// when the per-user limit of inotify instances is reached).
func watch(room string) *watcher {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	if _, err := syscall.InotifyAddWatch(fd, room, syscall.IN_CLOSE_WRITE|syscall.IN_DELETE|syscall.IN_ONLYDIR); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	// A non-blocking descriptor goes through Go's poller, so Close ends a
	// Read in progress: that is what makes a wait cancellable.
	w := &watcher{f: os.NewFile(uintptr(fd), "inotify:"+room), ch: make(chan struct{}, 1)}
	w.done.Add(1)
	go w.read()
	return w
}

// behind tells the watcher the waiter's ticket name: removals and closes of
// tickets after it are of no interest.
func (w *watcher) behind(name string) {
	if w != nil {
		w.mine.Store(&name)
	}
}

// events returns the channel that receives a value when events are pending
// (take them with take); nil, never ready, for a nil watcher.
func (w *watcher) events() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.ch
}

// take returns and clears the pending event bits.
func (w *watcher) take() uint8 {
	if w == nil {
		return 0
	}
	return uint8(w.bits.Swap(0))
}

// close stops the watcher: it ends the goroutine's Read at once with a
// deadline in the past and waits for it, then closes the descriptor in the
// background. Closing an inotify instance waits for an SRCU grace period in
// the kernel (10-20 ms measured here), which a hand-off must not pay; Settle
// waits for those closes.
func (w *watcher) close() {
	if w == nil {
		return
	}
	_ = w.f.SetReadDeadline(time.Unix(1, 0))
	w.done.Wait()
	startClosing()
	go func() {
		defer endClosing()
		_ = w.f.Close()
	}()
}

// read turns inotify events into event bits until the watcher is closed.
func (w *watcher) read() {
	defer w.done.Done()
	var buf [4096]byte
	for {
		n, err := w.f.Read(buf[:])
		if err != nil {
			return
		}
		var bits uint8
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameAt := off + syscall.SizeofInotifyEvent
			end := min(nameAt+int(ev.Len), n)
			name := strings.TrimRight(string(buf[nameAt:end]), "\x00")
			off = nameAt + int(ev.Len)
			bits |= w.classify(ev.Mask, name)
		}
		if bits == 0 {
			continue
		}
		w.bits.Or(uint32(bits))
		select {
		case w.ch <- struct{}{}:
		default: // a signal is pending already; its taker sees these bits
		}
	}
}

// classify says what one event means to this waiter.
func (w *watcher) classify(mask uint32, name string) uint8 {
	switch {
	case mask&(syscall.IN_Q_OVERFLOW|syscall.IN_IGNORED) != 0:
		return evHeld | evTicket // events lost, or the room went away
	case name == heldName:
		return evHeld
	case strings.HasPrefix(name, ticketPrefix):
		if mine := w.mine.Load(); mine == nil || compareNames(name, *mine) < 0 {
			return evTicket
		}
	}
	return 0
}
