package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

// hold is a lock taken and held in the background (zl_hold), for event
// loops that must not park a thread while they wait or while their work
// runs. A goroutine runs Manager.Block with a function that keeps the lock
// until the hold is cancelled, so the engine's own refresh, client-side
// expiry and loss decision apply unchanged; the caller only reads the
// handle's state, and its manager's notification descriptors say when to.
type hold struct {
	h    *lockHandle
	m    *managerHandle
	stop context.CancelFunc // ends the hold: the wait, or the held lock
	ctx  context.Context    // ended by stop

	mu   sync.Mutex
	run  context.Context // the held lock's context, once granted
	done chan struct{}   // closed when the hold has ended; err is set then
	err  error           // the outcome zl_free returns
}

// errNotHeldYet is why calls on a hold's handle that talk to the backend
// are refused before the key is granted.
var errNotHeldYet = errors.New("zl_hold: the key is not held yet")

// startHold starts taking key for a hold and returns it at once.
func startHold(m *managerHandle, key string, ttl time.Duration, opts []lock.Option) *hold {
	ctx, stop := context.WithCancel(context.Background())
	hd := &hold{m: m, stop: stop, ctx: ctx, done: make(chan struct{})}
	hd.h = &lockHandle{hold: hd}
	// Until the grant, the handle answers for a lock that is not acquired:
	// the accessors report nothing held, and calls that would talk to the
	// backend get a context that has already ended.
	hd.h.v.Store(m.v.Make(key, ttl))
	waiting, refuse := context.WithCancelCause(context.Background())
	refuse(errNotHeldYet)
	hd.h.calls.Store(&callScope{ctx: waiting, cancel: func() {}})

	if !m.startHold() {
		hd.finish(fmt.Errorf("zl_hold: %q: %w", key, lock.ErrClosed))
		return hd
	}
	go func() {
		defer m.holds.Done()
		hd.finish(m.v.Block(ctx, key, ttl, hd.keep, opts...))
	}()
	return hd
}

// keep runs under the lock: it publishes the lock on the handle, then keeps
// it until the hold is cancelled or the engine ends the run (the lock was
// lost, or the manager is closing).
func (hd *hold) keep(run context.Context) error {
	l, ok := lock.FromContext(run)
	if !ok {
		return errors.New("the engine ran the hold without its lock in the context")
	}
	hd.mu.Lock()
	hd.run = run
	hd.mu.Unlock()
	hd.h.calls.Store(&callScope{ctx: run, cancel: hd.stop})
	hd.h.v.Store(l)
	hd.m.notify.wake()
	<-run.Done()
	hd.m.notify.wake() // zl_lost now reports 1; the release is still to come
	return nil
}

// finish records the outcome and signals the end.
func (hd *hold) finish(err error) {
	hd.mu.Lock()
	hd.err = err
	close(hd.done)
	hd.mu.Unlock()
	hd.m.notify.wake()
}

// cancel ends the hold in the background (zl_cancel).
func (hd *hold) cancel() { hd.stop() }

// end ends the hold, waits for the end and returns the outcome (zl_free).
func (hd *hold) end() error {
	hd.stop()
	<-hd.done
	return hd.err
}

// ended reports whether the hold has ended (zl_hold_done).
func (hd *hold) ended() bool {
	select {
	case <-hd.done:
		return true
	default:
		return false
	}
}

// lost reports whether work under the hold must stop (zl_lost): it was
// cancelled, its held lock's run has ended, or the hold is over.
func (hd *hold) lost() bool {
	hd.mu.Lock()
	run := hd.run
	hd.mu.Unlock()
	return hd.ctx.Err() != nil || run != nil && run.Err() != nil || hd.ended()
}

// startHold counts a hold's goroutine, unless the manager's handle is
// closing: zl_close waits for the holds it has counted.
func (m *managerHandle) startHold() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.holds.Add(1)
	return true
}
