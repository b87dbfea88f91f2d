package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Observer is told what the locks of a Manager do, for metrics, traces and
// logs: give one to New or Open with WithObserver. Package
// github.com/zerotal/lock/otel makes one that records OpenTelemetry metrics
// and spans, and WithLogger logs through log/slog with one of its own.
//
// Every field is optional. A Manager without an Observer does no work for
// one: no allocation, no call, no reading of the clock.
//
// The engine calls the functions synchronously, on the goroutine doing the
// work: the caller's, or for what happens in the background, the
// refresher's or the expiry timer's. They must be safe for concurrent use
// and quick, and must not block. The engine holds none of its own locks
// while it calls them, but the handle's operations may be serialised
// meanwhile, so a function must not call methods of the lock the event is
// about.
//
// ctx is the context of the call the event belongs to, as Start returned it
// (a tracer finds its span there). What a Try's or Block's work meets in the
// background (a refresh, a loss at the expiry) gets that Try's or Block's
// ctx; what Manager.Close does gets context.Background(). Calls refused
// before they begin (bad arguments, a closed manager) are not observed.
//
// Keys may carry personal data ("invoice:<customer>"): an observer that
// exports them should let its user choose, as package otel does.
type Observer struct {
	// Start is called when Try, Block, or a ManagedLock's Acquire, Block,
	// Refresh, Release or ForceRelease begins, once its arguments are
	// valid. The context it returns is the one the call goes on with: fn's
	// context derives from it, and the call's events and End receive it.
	Start func(ctx context.Context, c Call) context.Context

	// End is called when that call returns, with its error: for Try and
	// Block, what they return (fn's error included), or an error saying fn
	// panicked, while the panic goes on.
	End func(ctx context.Context, c Call, err error)

	// Waiting is called when an acquisition begins to wait for the key: a
	// Block found it held, or queued in a driver that hands keys over. The
	// acquisition's AcquireEvent follows, with Wake set.
	Waiting func(ctx context.Context, c Call)

	// Acquire is called once per acquisition of Try, Block, Acquire and
	// ManagedLock.Block, when it has got the key or given up. A handle that
	// already holds the lock resets its TTL instead: that is a Refresh.
	Acquire func(ctx context.Context, e AcquireEvent)

	// Refresh is called after every extension of a held lock: by the
	// background refresher, by ManagedLock.Refresh, or by Acquire or Block
	// on a handle that holds the lock.
	Refresh func(ctx context.Context, e RefreshEvent)

	// Lost is called once per acquisition that stopped being held by its
	// owner before it was released, as soon as the engine learns of it: a
	// refresh found it gone, refreshes failed until the TTL passed, the
	// work outlived the TTL, the handle released or force-released it, or
	// the manager closed under running work (Reason LostClosed).
	Lost func(ctx context.Context, e LostEvent)

	// Release is called once per acquisition when its hold ends: it was
	// released (by Release, at the end of Try or Block, or by Close), or
	// dropped after a loss.
	Release func(ctx context.Context, e ReleaseEvent)

	// BackendError is called when a driver call fails, whatever the call
	// then reports. A driver call cut short by its context ending is not a
	// backend failure and is not reported.
	BackendError func(ctx context.Context, e BackendErrorEvent)
}

// Call is a call of the API, as Observer.Start and Observer.End see it.
type Call struct {
	Op     Op     // which call
	Key    string // the caller's key, without the manager's prefix
	Driver string // the driver's registered name ("memory", "redis"), or its package's name for New
}

// Op names a call of the API.
type Op uint8

// The calls an Observer sees.
const (
	OpTry          Op = iota + 1 // Manager.Try
	OpBlock                      // Manager.Block
	OpAcquire                    // ManagedLock.Acquire
	OpAcquireWait                // ManagedLock.Block
	OpRefresh                    // ManagedLock.Refresh
	OpRelease                    // ManagedLock.Release
	OpForceRelease               // ManagedLock.ForceRelease
)

// String returns the call's name in snake case: "try", "block", "acquire",
// "acquire_wait", "refresh", "release", "force_release".
func (o Op) String() string {
	switch o {
	case OpTry:
		return "try"
	case OpBlock:
		return "block"
	case OpAcquire:
		return "acquire"
	case OpAcquireWait:
		return "acquire_wait"
	case OpRefresh:
		return "refresh"
	case OpRelease:
		return "release"
	case OpForceRelease:
		return "force_release"
	}
	return "unknown"
}

// AcquireEvent is one acquisition's outcome.
type AcquireEvent struct {
	Call                  // the Try, Block, Acquire or ManagedLock.Block it belongs to
	Outcome Outcome       // how it ended
	Token   uint64        // the acquisition's fencing token; 0 unless acquired on a driver with tokens
	Wake    Wake          // how it waited: WakeNone when it did not (one attempt, or the key was free)
	Waited  time.Duration // how long it waited, from the start of the Block; 0 when Wake is WakeNone
	Err     error         // what the call reports when Outcome is neither Acquired nor NotAcquired
}

// Outcome is how an acquisition ended.
type Outcome uint8

// The outcomes of an acquisition.
const (
	OutcomeAcquired    Outcome = iota + 1 // the caller holds the key
	OutcomeNotAcquired                    // the key was held: Try, Acquire, or Block with WithTimeout(0)
	OutcomeTimedOut                       // Block waited its whole timeout
	OutcomeCanceled                       // the caller's context ended first
	OutcomeClosed                         // the manager closed
	OutcomeError                          // the backend failed
)

// String returns the outcome in snake case: "acquired", "not_acquired",
// "timed_out", "canceled", "closed", "error".
func (o Outcome) String() string {
	switch o {
	case OutcomeAcquired:
		return "acquired"
	case OutcomeNotAcquired:
		return "not_acquired"
	case OutcomeTimedOut:
		return "timed_out"
	case OutcomeCanceled:
		return "canceled"
	case OutcomeClosed:
		return "closed"
	case OutcomeError:
		return "error"
	}
	return "unknown"
}

// Wake says how a waiting acquisition learned that the key was free.
type Wake uint8

// The ways a wait ends.
const (
	WakeNone   Wake = iota // it did not wait
	WakeQueue              // the driver queued it and handed the key over (driver.Waiter)
	WakeNotice             // a release notice woke it (driver.Notifier)
	WakePoll               // the retry timer woke it: the driver could not tell
)

// String returns "none", "queue", "notice" or "poll".
func (w Wake) String() string {
	switch w {
	case WakeNone:
		return "none"
	case WakeQueue:
		return "queue"
	case WakeNotice:
		return "notice"
	case WakePoll:
		return "poll"
	}
	return "unknown"
}

// RefreshEvent is one extension of a held lock.
type RefreshEvent struct {
	Key     string // the caller's key
	Driver  string // the driver's name
	Outcome RefreshOutcome
	Token   uint64 // the acquisition's fencing token
	Retry   bool   // RefreshFailed: an earlier refresh of this acquisition failed too, and none has succeeded since
	Err     error  // RefreshFailed: the backend's error
}

// RefreshOutcome is how a refresh ended.
type RefreshOutcome uint8

// The outcomes of a refresh.
const (
	RefreshOK     RefreshOutcome = iota + 1 // the lock's TTL starts again
	RefreshFailed                           // the backend failed; the refresher retries until the client-side expiry
	RefreshLost                             // the lock is gone: a LostEvent follows
)

// String returns "ok", "failed" or "lost".
func (r RefreshOutcome) String() string {
	switch r {
	case RefreshOK:
		return "ok"
	case RefreshFailed:
		return "failed"
	case RefreshLost:
		return "lost"
	}
	return "unknown"
}

// LostEvent is the loss of an acquisition.
type LostEvent struct {
	Key    string        // the caller's key
	Driver string        // the driver's name
	Token  uint64        // the lost acquisition's fencing token
	Held   time.Duration // from the acquire to the moment the engine learned of the loss
	Err    *LostError    // why: the reason, the new holder's token, since when refreshes failed
}

// ReleaseEvent is the end of an acquisition's hold.
type ReleaseEvent struct {
	Key      string        // the caller's key
	Driver   string        // the driver's name
	Token    uint64        // the acquisition's fencing token
	Held     time.Duration // from the acquire to the release (or the drop)
	Released bool          // the backend still had the lock under this acquisition and freed it
	Err      error         // the backend's error when the release failed (the lock then expires by its TTL)
}

// BackendErrorEvent is a failed driver call.
type BackendErrorEvent struct {
	Key    string // the caller's key
	Driver string // the driver's name
	Op     string // the operation, as DriverError.Op names it: "acquire", "release", "refresh", "force release", "inspect"
	Err    error  // the driver's error
}

// errPanicked is the error Observer.End gets for a Try or Block whose fn
// panicked.
var errPanicked = errors.New("lock: fn panicked")

// joinObservers is what a repeated WithObserver does: b's functions run
// after a's.
func joinObservers(a, b Observer) Observer {
	return Observer{
		Start:        join2r(a.Start, b.Start),
		End:          join3(a.End, b.End),
		Waiting:      join2(a.Waiting, b.Waiting),
		Acquire:      join2(a.Acquire, b.Acquire),
		Refresh:      join2(a.Refresh, b.Refresh),
		Lost:         join2(a.Lost, b.Lost),
		Release:      join2(a.Release, b.Release),
		BackendError: join2(a.BackendError, b.BackendError),
	}
}

func join2[E any](a, b func(context.Context, E)) func(context.Context, E) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, e E) { a(ctx, e); b(ctx, e) }
}

func join3(a, b func(context.Context, Call, error)) func(context.Context, Call, error) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, c Call, err error) { a(ctx, c, err); b(ctx, c, err) }
}

func join2r(a, b func(context.Context, Call) context.Context) func(context.Context, Call) context.Context {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ctx context.Context, c Call) context.Context { return callStart(b, callStart(a, ctx, c), c) }
}

// callStart calls start, keeping ctx if start returns nil.
func callStart(start func(context.Context, Call) context.Context, ctx context.Context, c Call) context.Context {
	if got := start(ctx, c); got != nil {
		return got
	}
	return ctx
}

// observer is a Manager's Observer, with what every event says about the
// manager. A Manager without one has a nil *observer, and every method
// below starts with that check, small enough to be inlined: the engine's
// one-line calls cost a comparison when nobody observes.
type observer struct {
	Observer
	driver string
}

// watch is what an observer needs to know of a handle, beyond what the
// engine keeps: when the current acquisition was sent, the owner whose
// loss has been reported, and the context of the running Run, for what it
// meets in the background. A handle has one only when its manager has an
// observer; a nil *watch ignores what it is told. Guarded by the handle's
// mu.
type watch struct {
	acquired  time.Time
	lostOwner string
	runCtx    context.Context
}

// granted notes an acquisition sent at sent.
func (w *watch) granted(sent time.Time) {
	if w != nil {
		w.acquired = sent
	}
}

// running notes the context of the Run that starts.
func (w *watch) running(ctx context.Context) {
	if w != nil {
		w.runCtx = ctx
	}
}

// newObserver returns the observer of a manager on the driver named
// driverName, or nil when o has no function set.
func newObserver(o Observer, driverName string) *observer {
	if o.Start == nil && o.End == nil && o.Waiting == nil && o.Acquire == nil && o.Refresh == nil &&
		o.Lost == nil && o.Release == nil && o.BackendError == nil {
		return nil
	}
	return &observer{Observer: o, driver: driverName}
}

// driverName names a driver given to New by the name of its type's
// package: "memory" for drivers/memory's, as the registry names it.
func driverName(d any) string {
	name := strings.TrimLeft(fmt.Sprintf("%T", d), "*")
	if pkg, _, ok := strings.Cut(name, "."); ok && pkg != "" {
		return pkg
	}
	return "unknown"
}

func (o *observer) call(l *ManagedLock, op Op) Call {
	return Call{Op: op, Key: l.userKey, Driver: o.driver}
}

// start is Observer.Start.
func (o *observer) start(ctx context.Context, l *ManagedLock, op Op) context.Context {
	if o == nil || o.Start == nil {
		return ctx
	}
	return callStart(o.Start, ctx, o.call(l, op))
}

// end is Observer.End, with the call's error read when the deferred call
// runs.
func (o *observer) end(ctx context.Context, l *ManagedLock, op Op, err *error) {
	if o == nil || o.End == nil {
		return
	}
	o.End(ctx, o.call(l, op), *err)
}

// waiting is Observer.Waiting.
func (o *observer) waiting(ctx context.Context, l *ManagedLock, op Op) {
	if o == nil || o.Waiting == nil {
		return
	}
	o.Waiting(ctx, o.call(l, op))
}

// acquired is Observer.Acquire for an acquisition that ended with ok and
// err; w is its wait, or nil for a single attempt.
func (o *observer) acquired(ctx context.Context, l *ManagedLock, op Op, w *wait, ok bool, err error) {
	if o == nil || o.Acquire == nil {
		return
	}
	o.acquiredSlow(ctx, l, op, w, ok, err)
}

func (o *observer) acquiredSlow(ctx context.Context, l *ManagedLock, op Op, w *wait, ok bool, err error) {
	e := AcquireEvent{Call: o.call(l, op), Outcome: outcomeOf(ok, err, w != nil)}
	if e.Outcome == OutcomeAcquired {
		l.mu.Lock()
		e.Token = l.fenceToken
		l.mu.Unlock()
	} else if e.Outcome != OutcomeNotAcquired {
		e.Err = err
	}
	if w != nil && w.wake != WakeNone {
		e.Wake, e.Waited = w.wake, time.Since(w.start)
	}
	o.Acquire(ctx, e)
}

// outcomeOf classifies what an acquisition returned; waited says it was a
// Block's wait, whose contention is a timeout.
func outcomeOf(ok bool, err error, waited bool) Outcome {
	var de *DriverError
	switch {
	case err == nil && ok:
		return OutcomeAcquired
	case err == nil:
		return OutcomeNotAcquired
	case errors.Is(err, ErrClosed):
		return OutcomeClosed
	case errors.Is(err, ErrNotAcquired) && waited:
		return OutcomeTimedOut
	case errors.Is(err, ErrNotAcquired):
		return OutcomeNotAcquired
	case isContextErr(err) && !errors.As(err, &de):
		return OutcomeCanceled
	}
	return OutcomeError
}

// refreshed is Observer.Refresh.
func (o *observer) refreshed(ctx context.Context, l *ManagedLock, token uint64, outcome RefreshOutcome, retry bool, err error) {
	if o == nil || o.Refresh == nil {
		return
	}
	o.Refresh(ctx, RefreshEvent{Key: l.userKey, Driver: o.driver, Outcome: outcome, Token: token, Retry: retry, Err: err})
}

// lost is Observer.Lost for the acquisition made with owner, unless its
// loss was reported already: several paths can find one loss (the expiry
// and a failing refresher, a refresher and the end of the work).
func (o *observer) lost(ctx context.Context, l *ManagedLock, owner string, lost *LostError) {
	if o == nil || o.Lost == nil {
		return
	}
	o.lostSlow(ctx, l, owner, lost)
}

func (o *observer) lostSlow(ctx context.Context, l *ManagedLock, owner string, lost *LostError) {
	l.mu.Lock()
	first := l.watch.lostOwner != owner && l.ownerToken == owner
	if first {
		l.watch.lostOwner = owner
	}
	token, acquired := l.fenceToken, l.watch.acquired
	l.mu.Unlock()
	if first {
		o.Lost(ctx, LostEvent{Key: l.userKey, Driver: o.driver, Token: token, Held: time.Since(acquired), Err: lost})
	}
}

// lostInRun is lost for the running Try or Block of l, found in the
// background (the expiry timer, Close): it has the run's context. It does
// nothing when no run is under way: the run has ended and reported what it
// found itself.
func (o *observer) lostInRun(l *ManagedLock, lost *LostError) {
	if o == nil || o.Lost == nil {
		return
	}
	l.mu.Lock()
	ctx, owner, running := l.watch.runCtx, l.ownerToken, l.cancel != nil
	l.mu.Unlock()
	if running {
		o.lostSlow(ctx, l, owner, lost)
	}
}

// released is Observer.Release for a hold of l that ended at now. The
// caller holds l.op, so l's fencing token is still the ended hold's.
func (o *observer) released(ctx context.Context, l *ManagedLock, now time.Time, released bool, err error) {
	if o == nil || o.Release == nil {
		return
	}
	l.mu.Lock()
	token, acquired := l.fenceToken, l.watch.acquired
	l.mu.Unlock()
	o.Release(ctx, ReleaseEvent{Key: l.userKey, Driver: o.driver, Token: token, Held: now.Sub(acquired), Released: released, Err: err})
}

// dropped is Observer.Release for a hold that ended with a loss.
func (o *observer) dropped(ctx context.Context, l *ManagedLock) {
	if o == nil || o.Release == nil {
		return
	}
	o.released(ctx, l, time.Now(), false, nil)
}

// backendError is Observer.BackendError, unless the failure was the
// context's own doing.
func (o *observer) backendError(ctx context.Context, key, op string, err error) {
	if o == nil || o.BackendError == nil || ctx.Err() != nil && isContextErr(err) {
		return
	}
	o.BackendError(ctx, BackendErrorEvent{Key: key, Driver: o.driver, Op: op, Err: err})
}
