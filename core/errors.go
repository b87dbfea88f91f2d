package core

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is a stable numeric error code. Codes never change meaning once
// published: the C ABI and other runtimes see the same numbers.
type Code int

// The error codes. Their numbers are part of the public contract.
const (
	CodeOK               Code = 0  // success
	CodeNotAcquired      Code = 1  // the lock is held by someone else (or the wait ran out)
	CodeLost             Code = 2  // the lock was lost while its work ran
	CodeInvalidArgument  Code = 3  // bad input, rejected before the backend was touched
	CodeClosed           Code = 4  // the manager or driver is closed
	CodeInvalidHandle    Code = 5  // (C ABI) an unknown, freed or wrong-kind handle
	CodeDriver           Code = 6  // the backend failed
	CodeCanceled         Code = 7  // the caller's context was cancelled
	CodeDeadlineExceeded Code = 8  // the caller's context deadline passed
	CodeCallback         Code = 9  // the work function returned an error
	CodeInternal         Code = 10 // a bug: a panic inside the library was contained
)

// Sentinel errors, matched with errors.Is.
var (
	ErrNotAcquired     = errors.New("lock: not acquired")
	ErrLost            = errors.New("lock: lost")
	ErrInvalidArgument = errors.New("lock: invalid argument")
	ErrClosed          = errors.New("lock: closed")
)

// NotAcquiredError reports contention: the key was held by another owner.
type NotAcquiredError struct {
	Key    string        // the caller's key, without the prefix
	Waited time.Duration // how long Block waited; 0 for Try and Acquire
}

func (e *NotAcquiredError) Error() string {
	if e.Waited > 0 {
		return fmt.Sprintf("lock: %q not acquired after waiting %v", e.Key, e.Waited)
	}
	return fmt.Sprintf("lock: %q not acquired: held by another owner", e.Key)
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *NotAcquiredError) Is(target error) bool { return target == ErrNotAcquired }

// HTTPStatus returns 409 Conflict.
func (e *NotAcquiredError) HTTPStatus() int { return http.StatusConflict }

// LostError reports that the lock stopped being held by this owner while its
// work ran, so the work was not provably exclusive.
type LostError struct {
	Key   string // the caller's key, without the prefix
	Cause error  // why, when known (a failed refresh's error); may be nil
}

func (e *LostError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("lock: %q lost while held: %v", e.Key, e.Cause)
	}
	return fmt.Sprintf("lock: %q lost while held", e.Key)
}

// Is makes errors.Is(err, ErrLost) true.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap returns the cause.
func (e *LostError) Unwrap() error { return e.Cause }

// InvalidArgumentError reports bad input. It is returned before any backend
// call, so nothing held is touched.
type InvalidArgumentError struct {
	Field  string // the argument or option at fault, e.g. "key", "ttl", "timeout"
	Reason string // what is wrong with it
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("lock: invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *InvalidArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// DriverError reports a backend failure, wrapped with the operation and the
// caller's key. It never matches ErrNotAcquired.
type DriverError struct {
	Op  string // "acquire", "release", "extend", "force release", "exists", "inspect"
	Key string // the caller's key, without the prefix
	Err error  // the driver's error
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("lock: %s %q: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the driver's error.
func (e *DriverError) Unwrap() error { return e.Err }
