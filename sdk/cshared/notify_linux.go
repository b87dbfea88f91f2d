package main

import (
	"errors"
	"sync"
	"syscall"

	lock "github.com/zerotal/lock/sdk/go"
)

// notifier is a manager's notification descriptors (zl_notify_fd): each is
// one end of a Unix socket pair whose other end the library keeps, and
// writes a byte to whenever a hold of the manager changes. A socket rather
// than a pipe, so that a write to an end whose reader has gone is EPIPE
// (MSG_NOSIGNAL) and never a SIGPIPE in the host.
type notifier struct {
	mu     sync.Mutex
	fds    []int // the library's ends, non-blocking
	closed bool
}

// open makes a socket pair and returns the caller's end.
func (n *notifier) open() (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return -1, lock.ErrClosed
	}
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, &lock.DriverError{Op: "notify", Err: err}
	}
	if err := syscall.SetNonblock(pair[0], true); err != nil {
		syscall.Close(pair[0])
		syscall.Close(pair[1])
		return -1, &lock.DriverError{Op: "notify", Err: err}
	}
	n.fds = append(n.fds, pair[0])
	return pair[1], nil
}

// wake writes a byte to every descriptor. A full buffer means the reader
// has unread wake-ups already, so dropping this one loses nothing; an end
// whose reader has closed is closed too.
func (n *notifier) wake() {
	n.mu.Lock()
	defer n.mu.Unlock()
	kept := n.fds[:0]
	for _, fd := range n.fds {
		var err error = syscall.EINTR
		for errors.Is(err, syscall.EINTR) {
			err = syscall.Sendto(fd, []byte{1}, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, nil)
		}
		if err == nil || errors.Is(err, syscall.EAGAIN) {
			kept = append(kept, fd)
			continue
		}
		syscall.Close(fd)
	}
	n.fds = kept
}

// close closes the library's ends: every reader sees end-of-file.
func (n *notifier) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, fd := range n.fds {
		syscall.Close(fd)
	}
	n.fds, n.closed = nil, true
}
