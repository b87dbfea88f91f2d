package waitq

import (
	"context"
	"sync"
	"time"
)

// Poll is how often a waiter looks again when nothing woke it: the head
// tries to take the key (a lease that ran out, a dead holder that never kept
// the held file), the others check whether they have become the head.
const Poll = 50 * time.Millisecond

// heldName is the file a holder keeps open for writing while it holds the
// key; closing it (a release, or the holder's death) wakes the head.
const heldName = "held"

// TryFunc makes one attempt to take the key and reports whether it did. It
// must not wait for the key: Wait does the waiting.
type TryFunc func(ctx context.Context) (bool, error)

// pollLoop waits without a queue: it tries at every notice and every Poll.
// It is the fallback where a room cannot be used.
func pollLoop(ctx context.Context, try TryFunc, notices <-chan struct{}) error {
	timer := time.NewTimer(Poll)
	defer timer.Stop()
	for {
		ok, err := try(ctx)
		if err != nil || ok {
			return err
		}
		timer.Reset(Poll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-notices:
		case <-timer.C:
		}
	}
}

// GiveBackTimeout bounds GiveBack.
const GiveBackTimeout = 2 * time.Second

// GiveBack runs release, detached from any caller's context and bounded by
// GiveBackTimeout, best-effort: a wait (or an acquire) that ends in an error
// after a try whose outcome is unknown must leave nothing held, as the
// driver.Waiter contract asks.
func GiveBack(release func(ctx context.Context) (bool, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), GiveBackTimeout)
	defer cancel()
	_, _ = release(ctx)
}

// closing counts the watchers being closed in the background. It is not a
// sync.WaitGroup: waits of other Drivers start closes while one Driver's
// Close waits, and a WaitGroup forbids an Add concurrent with a Wait.
var closing struct {
	mu   sync.Mutex
	n    int
	idle *sync.Cond
}

func init() { closing.idle = sync.NewCond(&closing.mu) }

// startClosing counts one background close; endClosing ends it.
func startClosing() {
	closing.mu.Lock()
	closing.n++
	closing.mu.Unlock()
}

func endClosing() {
	closing.mu.Lock()
	if closing.n--; closing.n == 0 {
		closing.idle.Broadcast()
	}
	closing.mu.Unlock()
}

// Settle waits until every wait that has returned has released all it used
// (some of it is released in the background: see watcher.close). Waits.Close
// calls it, after the Driver's own waits have returned.
func Settle() {
	closing.mu.Lock()
	for closing.n > 0 {
		closing.idle.Wait()
	}
	closing.mu.Unlock()
}

// Waits counts one Driver's AcquireWait calls in flight, so that its Close
// can return only once they have: a Driver promises to leave no goroutine
// behind, and a wait that Close ended still gives back and closes its
// watcher on its way out. The zero value is ready to use.
type Waits struct {
	mu       sync.Mutex
	closed   bool
	inFlight sync.WaitGroup
}

// Start counts a new wait, or reports false once Close has begun: the wait
// must not start. A wait that started calls Done when it returns.
func (w *Waits) Start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.inFlight.Add(1)
	return true
}

// Done ends a wait that Start counted.
func (w *Waits) Done() { w.inFlight.Done() }

// Close refuses new waits and returns once the waits in flight have
// returned and released all they used. The caller ends those waits first
// (cancels their contexts); Close does not.
func (w *Waits) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.inFlight.Wait()
	Settle()
}
