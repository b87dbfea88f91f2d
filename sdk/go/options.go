package lock

import (
	"fmt"
	"time"
)

// defaultRetryDelay is how often Block retries when the driver cannot tell
// it that a key has been freed: the spec's default for RetryDelay, which a
// test holds this to.
const defaultRetryDelay = 100 * time.Millisecond

// minInterval is the shortest retry delay and refresh interval Block and
// Run accept. Shorter ones would turn a wait or a refresher into a loop that
// hammers the backend; timers cannot honour them on a loaded machine anyway.
const minInterval = time.Millisecond

// releaseTimeout bounds the release that ends a Run, and any release made on
// a context detached from the caller's: long enough for a slow backend, short
// enough that a dead backend does not hang shutdown.
const releaseTimeout = 5 * time.Second

// options are the settings of Block and Run, as the generated newOptions
// fills them from Option values; resolve applies the defaults, several of
// which depend on the lock's TTL. The zero value means the defaults.
type options struct {
	// Timeout is the longest Block waits. Zero with TimeoutSet false means
	// the lock's TTL; zero with TimeoutSet true means one attempt, no wait.
	Timeout    time.Duration
	TimeoutSet bool
	// RetryDelay is the polling interval while Block waits, when the driver
	// offers no wake-up; zero means defaultRetryDelay.
	RetryDelay time.Duration
	// Refresh extends the lock in the background while Run's fn runs.
	Refresh bool
	// RefreshEvery is the refresh interval; zero means a third of the TTL.
	// Setting it implies Refresh.
	RefreshEvery time.Duration
}

// resolve validates o against ttl and fills in the defaults.
func (o options) resolve(ttl time.Duration) (options, error) {
	switch {
	case o.Timeout < 0:
		return o, &InvalidArgumentError{Field: "timeout", Reason: fmt.Sprintf("is %v; it must not be negative", o.Timeout)}
	case o.RetryDelay < 0:
		return o, &InvalidArgumentError{Field: "retry delay", Reason: fmt.Sprintf("is %v; it must not be negative", o.RetryDelay)}
	case o.RefreshEvery < 0:
		return o, &InvalidArgumentError{Field: "refresh every", Reason: fmt.Sprintf("is %v; it must not be negative", o.RefreshEvery)}
	case o.RetryDelay > 0 && o.RetryDelay < minInterval:
		return o, &InvalidArgumentError{Field: "retry delay", Reason: fmt.Sprintf("is %v; the minimum is %v", o.RetryDelay, minInterval)}
	case o.RefreshEvery > 0 && o.RefreshEvery < minInterval:
		return o, &InvalidArgumentError{Field: "refresh every", Reason: fmt.Sprintf("is %v; the minimum is %v", o.RefreshEvery, minInterval)}
	case o.RefreshEvery >= ttl:
		return o, &InvalidArgumentError{Field: "refresh every", Reason: fmt.Sprintf("is %v; it must be shorter than the TTL (%v) or the lock expires between refreshes", o.RefreshEvery, ttl)}
	}
	if !o.TimeoutSet {
		o.Timeout = ttl
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = defaultRetryDelay
	}
	if o.RefreshEvery > 0 {
		o.Refresh = true
	}
	if o.Refresh && o.RefreshEvery == 0 {
		o.RefreshEvery = max(ttl/3, minInterval)
		if o.RefreshEvery >= ttl {
			return o, &InvalidArgumentError{Field: "refresh every", Reason: fmt.Sprintf("defaults to a third of the TTL, at least %v, and a TTL of %v is too short for that", minInterval, ttl)}
		}
	}
	return o, nil
}
