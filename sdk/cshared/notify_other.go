//go:build !linux

package main

import (
	"errors"

	lock "github.com/zerotal/lock/sdk/go"
)

// notifier has no descriptors off Linux yet: zl_notify_fd fails there, and
// holds (zl_hold) still work for callers that poll zl_hold_done.
type notifier struct{}

func (*notifier) open() (int, error) {
	return -1, &lock.DriverError{Op: "notify", Err: errors.New("zl_notify_fd is supported on Linux only")}
}

func (*notifier) wake()  {}
func (*notifier) close() {}
