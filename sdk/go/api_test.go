package lock_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
	lock "github.com/zerotal/lock/sdk/go"
)

// The public surface of issue 2, name by name and signature by signature:
// external acceptance tests compile against exactly these, so this file
// fails to compile if the spec or the glue drifts from them.
var (
	_ func() lock.Config                                              = lock.ConfigFromEnv
	_ func(lock.Config) (*lock.Manager, error)                        = lock.Open
	_ func(driver.Driver, ...lock.ManagerOption) *lock.Manager        = lock.New
	_ func(string) lock.ManagerOption                                 = lock.WithPrefix
	_ func(lock.Observer) lock.ManagerOption                          = lock.WithObserver
	_ func(*slog.Logger) lock.ManagerOption                           = lock.WithLogger
	_ func(lock.Config, ...lock.ManagerOption) (*lock.Manager, error) = lock.OpenWith
	_ func(*lock.Manager) error                                       = (*lock.Manager).Close

	_ func(*lock.Manager, context.Context, string, time.Duration, func(context.Context) error, ...lock.Option) error = (*lock.Manager).Try
	_ func(*lock.Manager, context.Context, string, time.Duration, func(context.Context) error, ...lock.Option) error = (*lock.Manager).Block
	_ func(*lock.Manager, string, time.Duration) *lock.ManagedLock                                                   = (*lock.Manager).Make
	_ func(context.Context, string, time.Duration, func(context.Context) error, ...lock.Option) error                = lock.Try
	_ func(context.Context, string, time.Duration, func(context.Context) error, ...lock.Option) error                = lock.Block
	_ func(string, time.Duration) *lock.ManagedLock                                                                  = lock.Make

	_ func() *lock.Manager  = lock.Default
	_ func(m *lock.Manager) = lock.SetDefault

	_ func(time.Duration) lock.Option = lock.WithTimeout
	_ func(time.Duration) lock.Option = lock.WithRetryDelay
	_ func() lock.Option              = lock.WithRefresh
	_ func(time.Duration) lock.Option = lock.WithRefreshEvery

	_ func(*lock.ManagedLock, context.Context) (bool, error)                = (*lock.ManagedLock).Acquire
	_ func(*lock.ManagedLock, context.Context, ...lock.Option) error        = (*lock.ManagedLock).Block
	_ func(*lock.ManagedLock, context.Context) error                        = (*lock.ManagedLock).Release
	_ func(*lock.ManagedLock, context.Context) error                        = (*lock.ManagedLock).ForceRelease
	_ func(*lock.ManagedLock, context.Context) (bool, error)                = (*lock.ManagedLock).Refresh
	_ func(*lock.ManagedLock) string                                        = (*lock.ManagedLock).Key
	_ func(*lock.ManagedLock) string                                        = (*lock.ManagedLock).Owner
	_ func(*lock.ManagedLock) bool                                          = (*lock.ManagedLock).IsAcquired
	_ func(*lock.ManagedLock) time.Time                                     = (*lock.ManagedLock).ExpiresAt
	_ func(*lock.ManagedLock) uint64                                        = (*lock.ManagedLock).Token
	_ func(context.Context) (*lock.ManagedLock, bool)                       = lock.FromContext
	_ func(...any) string                                                   = lock.Key
	_ func(*lock.ManagedLock, context.Context) (driver.Holder, bool, error) = (*lock.ManagedLock).Holder

	_ error = lock.ErrNotAcquired
	_ error = lock.ErrLost
	_ error = lock.ErrInvalidArgument
	_ error = lock.ErrClosed

	_ = lock.Config{
		Driver: "memory",
		Prefix: "zerotal_lock:",
		SQLite: lock.SQLiteConfig{Path: ":memory:"},
		Redis:  lock.RedisConfig{URL: "redis://127.0.0.1:6379"},
		File:   lock.FileConfig{Dir: "/tmp/locks"},
	}
	_ error                         = &lock.NotAcquiredError{Key: "k"}
	_ error                         = &lock.LostError{Key: "k"}
	_ interface{ HTTPStatus() int } = &lock.NotAcquiredError{}
	_ func(error) lock.Code         = lock.CodeOf
	_ error                         = &lock.InvalidArgumentError{Field: "key", Reason: "must not be empty"}
	_ error                         = &lock.DriverError{Op: "acquire", Key: "k", Err: errors.ErrUnsupported}
)

func TestErrorTypesMatchTheirSentinelsAndStatus(t *testing.T) {
	cases := []struct {
		err      error
		sentinel error
		code     lock.Code
		status   int
	}{
		{&lock.NotAcquiredError{Key: "k"}, lock.ErrNotAcquired, lock.CodeNotAcquired, http.StatusConflict},
		{&lock.LostError{Key: "k"}, lock.ErrLost, lock.CodeLost, http.StatusConflict},
		{&lock.InvalidArgumentError{Field: "key", Reason: "must not be empty"}, lock.ErrInvalidArgument, lock.CodeInvalidArgument, http.StatusBadRequest},
		{lock.ErrClosed, lock.ErrClosed, lock.CodeClosed, http.StatusServiceUnavailable},
		{&lock.DriverError{Op: "acquire", Key: "k", Err: errors.New("connection refused")}, nil, lock.CodeDriver, http.StatusServiceUnavailable},
		{context.Canceled, context.Canceled, lock.CodeCanceled, 499},
		{context.DeadlineExceeded, context.DeadlineExceeded, lock.CodeDeadlineExceeded, http.StatusGatewayTimeout},
		{errors.New("fn failed"), nil, lock.CodeCallback, http.StatusInternalServerError},
		{nil, nil, lock.CodeOK, http.StatusOK},
	}
	for _, c := range cases {
		if c.sentinel != nil && !errors.Is(c.err, c.sentinel) {
			t.Errorf("%v does not match %v", c.err, c.sentinel)
		}
		if got := lock.CodeOf(c.err); got != c.code || got.HTTPStatus() != c.status {
			t.Errorf("CodeOf(%v) = %v (HTTP %d), want %v (HTTP %d)", c.err, got, got.HTTPStatus(), c.code, c.status)
		}
		if e, ok := c.err.(interface{ HTTPStatus() int }); ok && e.HTTPStatus() != c.status {
			t.Errorf("%v.HTTPStatus() = %d, want %d", c.err, e.HTTPStatus(), c.status)
		}
	}
	if errors.Is(&lock.DriverError{Op: "acquire", Err: errors.New("boom")}, lock.ErrNotAcquired) {
		t.Error("a backend failure matches ErrNotAcquired")
	}
}

// CodeOf looks through wrapping and joins, and ranks the library's codes
// over the context's over a backend failure's.
func TestCodeOfPrecedence(t *testing.T) {
	lost := &lock.LostError{Key: "k", Cause: lock.ErrClosed}
	cases := []struct {
		err  error
		want lock.Code
	}{
		{lost, lock.CodeLost},
		{errors.Join(context.Canceled, lost), lock.CodeLost},
		{errors.Join(errors.New("fn failed"), lost), lock.CodeLost},
		{&lock.DriverError{Op: "acquire", Err: context.DeadlineExceeded}, lock.CodeDeadlineExceeded},
		{errors.Join(lock.ErrClosed, &lock.DriverError{Op: "release", Err: errors.New("gone")}), lock.CodeClosed},
		{wrap(wrap(&lock.NotAcquiredError{Key: "k"})), lock.CodeNotAcquired},
		{wrap(errors.New("fn failed")), lock.CodeCallback},
	}
	for _, c := range cases {
		if got := lock.CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if got, want := lock.Code(42).String(), "Code(42)"; got != want {
		t.Errorf("Code(42).String() = %q, want %q", got, want)
	}
}

type wrapped struct{ err error }

func (w wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

func wrap(err error) error { return wrapped{err} }
