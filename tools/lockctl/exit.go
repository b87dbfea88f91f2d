package main

import (
	"errors"
	"fmt"
	"io"
)

// The exit statuses of lockctl itself. Where one exists, the number is the
// sysexits.h code that means the same thing, so that callers that already
// know those codes (cron wrappers, supervisors) read them right. Besides
// these, `lockctl run` exits with its command's own status, 128+n when the
// command was killed by signal n, and 126 or 127 when the command cannot be
// run, as a shell does.
const (
	exitOK       = 0
	exitUsage    = 64 // EX_USAGE: bad flags or arguments
	exitSoftware = 70 // EX_SOFTWARE: the backend failed after it had been reached
	exitBusy     = 75 // EX_TEMPFAIL: the lock is held by someone else, or the wait ran out
	exitConfig   = 78 // EX_CONFIG: the backend cannot be opened or reached
	exitLost     = 79 // the lock was lost while the command ran
	exitNoExec   = 126
	exitNotFound = 127
	exitSignal   = 128 // plus the signal number: the command, or lockctl while waiting, was killed by a signal
)

// exitError is an error that ends lockctl with a given status. Its message
// is printed on one line, prefixed with "lockctl: ", unless it is empty.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail returns an exitError with a formatted message.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// usageError is a fail(exitUsage, ...) that points at the command's help.
func usageError(cmd, format string, args ...any) error {
	return fail(exitUsage, "%s: %s (see 'lockctl %s --help')", cmd, fmt.Sprintf(format, args...), cmd)
}

// exitCode prints err, if it says anything, and returns the status it
// carries; an error that is not an exitError is a bug in lockctl, and gets
// exitSoftware rather than a stack trace.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if !errors.As(err, &e) {
		e = &exitError{code: exitSoftware, msg: err.Error()}
	}
	if e.msg != "" {
		fmt.Fprintf(stderr, "lockctl: %s\n", e.msg)
	}
	return e.code
}
