package etcd

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Backoff between the attempts of an operation: doubling from the first to
// the last, with jitter, so that the clients of a cluster in an election do
// not retry in step.
const (
	firstBackoff = 10 * time.Millisecond
	lastBackoff  = 500 * time.Millisecond
)

// call runs attempt until it succeeds, fails for a reason a retry cannot
// cure, ctx ends or the Driver closes, and returns its last error. Each
// attempt runs under the Driver's operation timeout and requires a leader:
// a member that has lost its leader refuses at once instead of queueing the
// request, so the next attempt can go elsewhere.
//
// Every attempt given to call must be safe to repeat after an attempt whose
// outcome is unknown (a timeout, a leader change, a dropped connection):
// the etcd client does not retry writes, because only the caller can tell
// whether one is idempotent. The driver's are: an owner-guarded Txn finds
// its own effect and acts the same; a lease grant names its lease id.
//
// ambiguous, when not nil, is set when an attempt failed in a way that
// leaves its outcome unknown.
func (d *Driver) call(ctx context.Context, ambiguous *bool, attempt func(ctx context.Context) error) error {
	return d.retry(ctx, d.closing, ambiguous, attempt)
}

// retry is call with the channel that stops it instead of the Driver's
// closing: background clean-up keeps trying while Close waits for it.
func (d *Driver) retry(ctx context.Context, closing <-chan struct{}, ambiguous *bool, attempt func(ctx context.Context) error) error {
	backoff := firstBackoff
	for {
		actx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), d.opTimeout)
		err := attempt(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || isClosed(closing) || !transient(err) || d.client.Ctx().Err() != nil {
			return err
		}
		if ambiguous != nil && !refused(err) {
			*ambiguous = true
		}
		pause := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-ctx.Done():
			pause.Stop()
			return err
		case <-closing:
			pause.Stop()
			return err
		case <-pause.C:
		}
		backoff = min(2*backoff, lastBackoff)
	}
}

// isClosed reports whether ch is closed; a nil ch never is.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// errLearner is a learner member's refusal: the next attempt may reach a
// voting member.
var errLearner = rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)

// transient reports whether err may go away if the attempt is made again:
// the attempt's own deadline, an unreachable member, a leader election, an
// overloaded server. Permission, argument and quota errors are final.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true // the attempt's deadline: call has checked the caller's
	}
	err = rpctypes.Error(err)
	switch {
	case errors.Is(err, rpctypes.ErrTooManyRequests), errors.Is(err, rpctypes.ErrNotLeader),
		errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, errLearner):
		return true
	case errors.Is(err, rpctypes.ErrNoSpace):
		return false // an alarm an operator must clear
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		switch ee.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			return true
		}
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return true
	}
	return false
}

// refused reports whether err says the request was turned away before the
// server acted on it: no leader (the request required one), or no
// connection to send it on (gRPC reports a connection that could not be
// made, a TLS handshake that failed, as "connection error").
func refused(err error) bool {
	if errors.Is(rpctypes.Error(err), rpctypes.ErrNoLeader) {
		return true
	}
	desc := rpctypes.ErrorDesc(err)
	return desc == "there is no address available" || desc == "there is no connection available" ||
		strings.HasPrefix(desc, "connection error:")
}
