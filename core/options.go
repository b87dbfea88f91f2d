package core

import (
	"fmt"
	"time"
)

// DefaultRetryDelay is how often Block retries when the driver cannot tell it
// that a key has been freed.
const DefaultRetryDelay = 100 * time.Millisecond

// ReleaseTimeout bounds the release that ends a Run, and any release made on
// a context detached from the caller's: long enough for a slow backend, short
// enough that a dead backend does not hang shutdown.
const ReleaseTimeout = 5 * time.Second

// Options tune Block and Run. The zero value means the defaults.
type Options struct {
	// Timeout is the longest Block waits. Zero with TimeoutSet false means
	// the lock's TTL; zero with TimeoutSet true means one attempt, no wait.
	Timeout    time.Duration
	TimeoutSet bool
	// RetryDelay is the polling interval while Block waits, when the driver
	// offers no wake-up; zero means DefaultRetryDelay.
	RetryDelay time.Duration
	// Refresh extends the lock in the background while Run's fn runs.
	Refresh bool
	// RefreshEvery is the refresh interval; zero means a third of the TTL.
	// Setting it implies Refresh.
	RefreshEvery time.Duration
}

// resolve validates o against ttl and fills in the defaults.
func (o Options) resolve(ttl time.Duration) (Options, error) {
	switch {
	case o.Timeout < 0:
		return o, &InvalidArgumentError{Field: "timeout", Reason: fmt.Sprintf("is %v; it must not be negative", o.Timeout)}
	case o.RetryDelay < 0:
		return o, &InvalidArgumentError{Field: "retry delay", Reason: fmt.Sprintf("is %v; it must not be negative", o.RetryDelay)}
	case o.RefreshEvery < 0:
		return o, &InvalidArgumentError{Field: "refresh every", Reason: fmt.Sprintf("is %v; it must not be negative", o.RefreshEvery)}
	case o.RefreshEvery >= ttl:
		return o, &InvalidArgumentError{Field: "refresh every", Reason: fmt.Sprintf("is %v; it must be shorter than the TTL (%v) or the lock expires between refreshes", o.RefreshEvery, ttl)}
	}
	if !o.TimeoutSet {
		o.Timeout = ttl
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.RefreshEvery > 0 {
		o.Refresh = true
	}
	if o.Refresh && o.RefreshEvery == 0 {
		o.RefreshEvery = ttl / 3
	}
	return o, nil
}
