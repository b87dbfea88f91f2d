package lock

import (
	"errors"
	"fmt"
)

// lostError returns the *LostError of this handle's key for reason.
func (l *ManagedLock) lostError(reason LostReason, err error) *LostError {
	return &LostError{Key: l.userKey, Reason: reason, Cause: err}
}

// expiredError is the loss of an acquisition whose client-side expiry has
// passed: unreachable if refreshes were failing, expired otherwise.
func (l *ManagedLock) expiredError() *LostError {
	l.mu.Lock()
	since, err := l.failing, l.failErr
	l.mu.Unlock()
	if since.IsZero() {
		return l.lostError(LostExpired, nil)
	}
	return &LostError{Key: l.userKey, Reason: LostUnreachable, Since: since, Cause: err}
}

// errNoInspector is the error Holder gives on a driver without Inspector.
func errNoInspector(d any) error {
	return fmt.Errorf("driver %T cannot describe holders: %w", d, errors.ErrUnsupported)
}

// Name returns the reason as one stable, low-cardinality word, for metrics
// and logs: "expired", "taken_over", "gone", "unreachable", "released",
// "closed" ("unknown" for any other value). String says it in a sentence.
func (r LostReason) Name() string {
	switch r {
	case LostExpired:
		return "expired"
	case LostTakenOver:
		return "taken_over"
	case LostGone:
		return "gone"
	case LostUnreachable:
		return "unreachable"
	case LostReleased:
		return "released"
	case LostClosed:
		return "closed"
	}
	return "unknown"
}
