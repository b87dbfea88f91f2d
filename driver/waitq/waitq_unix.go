//go:build unix

package waitq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// File names in a room. Tickets are "t.<seq, 20 digits>.<pid>.<random>":
// the zero-padded sequence number makes names sort in queue order, and the
// random part makes every name unique, so a name is never reused and
// removing a dead ticket by name can never remove a live one. Two waiters
// that list the room at the same moment may pick the same number; they
// queued at the same moment, and the rest of the name orders them.
const (
	ticketPrefix = "t."
	tempPrefix   = ".tmp." // a ticket being made, before it is renamed into the queue
)

// Wait takes a key through try, first come first served among the waiters
// of room, a directory that every process waiting for the key names alike.
// notices, which may be nil, wakes the head at once (a release in this
// process). Wait returns nil once try has taken the key, try's error, or
// ctx.Err() when ctx ends first; it leaves the queue on every path.
//
// When nobody is queued, Wait tries at once, without queueing. Room "", or a
// room that cannot be created, waits without a queue (see pollLoop).
func Wait(ctx context.Context, room string, try TryFunc, notices <-chan struct{}) error {
	if room == "" {
		return pollLoop(ctx, try, notices)
	}
	if !queued(room) {
		if ok, err := try(ctx); err != nil || ok {
			return err
		}
	}
	if err := os.MkdirAll(room, 0o777); err != nil {
		return pollLoop(ctx, try, notices)
	}
	// Watch before queueing and trying: a release after the watch starts
	// sends an event, one before it is seen by the first try.
	w := watch(room)
	defer w.close()
	t, err := join(room)
	if err != nil {
		return pollLoop(ctx, try, notices)
	}
	defer t.leave()
	w.behind(t.name)
	timer := time.NewTimer(Poll)
	defer timer.Stop()
	// retry is how soon the head tries again after an event that did not
	// free the key: a holder's held file closes as its process exits,
	// a little before the store can tell that the process is dead.
	retry := time.Duration(0)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		delay := Poll
		if t.first() {
			ok, err := try(ctx)
			if err != nil || ok {
				return err
			}
			if retry > 0 {
				delay, retry = retry, min(2*retry, Poll)
			}
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-notices:
			retry = 0
		case <-w.events():
			retry = 0
			if w.take()&evHeld != 0 {
				retry = time.Millisecond
			}
		case <-timer.C:
			if delay == Poll {
				retry = 0
			}
		}
	}
}

// Hold opens room's held file for writing and returns it, or nil when room
// does not exist (nobody has waited for the key). The holder keeps it open
// while it holds the key and closes it right after the release: the close,
// done by the kernel if the holder dies, wakes the head of the queue.
func Hold(room string) *os.File {
	if room == "" {
		return nil
	}
	f, err := os.OpenFile(room+string(os.PathSeparator)+heldName, os.O_WRONLY|os.O_CREATE|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return nil
	}
	return f
}

// Poke wakes the waiters of room after a release by a holder that kept no
// held file: opening the held file for writing and closing it is an
// IN_CLOSE_WRITE event. A missing room means nobody waits.
func Poke(room string) {
	if f := Hold(room); f != nil {
		_ = f.Close()
	}
}

// queued reports whether room holds any ticket; a missing or unreadable
// room holds none.
func queued(room string) bool {
	names, err := readNames(room)
	if err != nil {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, ticketPrefix) {
			return true
		}
	}
	return false
}

// readNames lists room.
func readNames(room string) ([]string, error) {
	f, err := os.Open(room)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.Readdirnames(-1)
}

// ticket is this waiter's place in a room.
type ticket struct {
	room, name string
	f          *os.File // open for writing and flock(LOCK_EX)-ed until leave
}

// join puts a new ticket at the end of room's queue. The ticket is made and
// locked under a temporary name and then renamed into the queue, so that no
// one ever sees a queued ticket without its lock.
func join(room string) (*ticket, error) {
	pid := strconv.Itoa(os.Getpid())
	for range 3 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		suffix := pid + "." + hex.EncodeToString(b[:])
		tmp := room + string(os.PathSeparator) + tempPrefix + suffix
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0o666)
		if err != nil {
			return nil, err
		}
		if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			// A waiter probing leftovers holds it for an instant (and may
			// remove it): start again under another name.
			_ = os.Remove(tmp)
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return nil, err
		}
		names, err := readNames(room)
		if err != nil {
			_ = os.Remove(tmp)
			_ = f.Close()
			return nil, err
		}
		var last uint64
		for _, n := range names {
			if seq, ok := parseSeq(n); ok {
				last = max(last, seq)
			}
		}
		name := ticketPrefix + pad(last+1) + "." + suffix
		err = os.Rename(tmp, room+string(os.PathSeparator)+name)
		if err == nil {
			return &ticket{room: room, name: name, f: f}, nil
		}
		_ = f.Close()
		// Another waiter took our unlocked file for a dead one's leftover
		// in the instant between create and flock, and removed it: again.
		if !errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(tmp)
			return nil, err
		}
	}
	return nil, errors.New("waitq: could not queue")
}

// leave removes the ticket, then unlocks and closes it: the removal (and
// the close) wake the waiters behind.
func (t *ticket) leave() {
	_ = os.Remove(t.room + string(os.PathSeparator) + t.name)
	_ = t.f.Close()
}

// first reports whether t heads the queue, removing the tickets ahead of it
// whose owners have died (and leftovers of queueing that died midway).
func (t *ticket) first() bool {
	names, err := readNames(t.room)
	if err != nil {
		return true // the room is gone: nobody to wait behind
	}
	slices.SortFunc(names, compareNames)
	for _, n := range names {
		switch {
		case n == t.name:
			return true
		case strings.HasPrefix(n, tempPrefix):
			if gone(t.room, n) {
				_ = os.Remove(t.room + string(os.PathSeparator) + n)
			}
		case strings.HasPrefix(n, ticketPrefix) && compareNames(n, t.name) < 0:
			if !gone(t.room, n) {
				return false
			}
			_ = os.Remove(t.room + string(os.PathSeparator) + n)
		}
	}
	return true
}

// gone reports whether nobody holds the lock on room's entry name: its owner
// has left or died. An entry that cannot be checked counts as alive, except
// one that no longer exists.
func gone(room, name string) bool {
	f, err := os.OpenFile(room+string(os.PathSeparator)+name, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false // missing: already removed; otherwise unknown
	}
	defer func() { _ = f.Close() }()
	return flock(f, syscall.LOCK_SH|syscall.LOCK_NB) == nil
}

// flock calls flock(2) on f, again after EINTR.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// parseSeq returns the sequence number of a ticket name.
func parseSeq(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, ticketPrefix)
	if !ok {
		return 0, false
	}
	seq, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

// compareNames orders ticket names: by sequence number, then by the rest.
// The padding makes that the byte order, for every number below 10^20.
func compareNames(a, b string) int { return strings.Compare(a, b) }

// pad formats a sequence number in 20 digits.
func pad(n uint64) string {
	s := strconv.FormatUint(n, 10)
	return strings.Repeat("0", 20-len(s)) + s
}
