package main

/*
#include "zerotal_lock.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	lock "github.com/zerotal/lock/sdk/go"
)

// The handle table. C code holds integers, never Go pointers: an id comes
// from a counter and is never reused, 0 is never one, and every entry knows
// its kind, so a stale, forged or wrong-kind handle misses the table and
// gives ZL_INVALID_HANDLE instead of touching memory. A sync.Map keeps the
// lookups every call makes free of lock contention between threads.
var (
	handles    sync.Map // uint64 → *managerHandle or *lockHandle
	lastHandle atomic.Uint64
)

// managerHandle is a zl_manager's entry.
type managerHandle struct {
	v      *lock.Manager
	notify notifier // the descriptors zl_notify_fd handed out

	mu      sync.Mutex
	closing bool           // zl_close has begun: no new holds
	holds   sync.WaitGroup // the goroutines of its holds (zl_hold)
}

// value is the manager the handle stands for.
func (h *managerHandle) value() *lock.Manager { return h.v }

// ctx is the context of calls on the manager: managers have no calls to
// cancel (zl_close ends their waits).
func (*managerHandle) ctx() context.Context { return context.Background() }

// lockHandle is a zl_lock's entry: one made by zl_make, one lent to a
// callback for the duration of the call, or a hold made by zl_hold.
type lockHandle struct {
	v     atomic.Pointer[lock.ManagedLock] // set once, except for a hold: its lock once granted
	lent  bool                             // lent to a callback: freed by the library when it returns
	hold  *hold                            // the hold, for a handle made by zl_hold
	calls atomic.Pointer[callScope]        // the context of calls on the handle
}

// value is the lock the handle stands for now.
func (h *lockHandle) value() *lock.ManagedLock { return h.v.Load() }

// callScope is a context for calls and the function that ends it.
type callScope struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newCallScope() *callScope {
	ctx, cancel := context.WithCancel(context.Background())
	return &callScope{ctx: ctx, cancel: cancel}
}

// ctx is the context of calls on the handle: zl_cancel ends it, and for a
// lent handle it is the context the engine gave the callback.
func (h *lockHandle) ctx() context.Context { return h.calls.Load().ctx }

// cancelCalls ends the calls in progress. A handle of its own gets a fresh
// context for later calls; a lent handle's context stays ended, since it
// asks the callback to stop.
func (h *lockHandle) cancelCalls() {
	if h.lent {
		h.calls.Load().cancel()
		return
	}
	h.calls.Swap(newCallScope()).cancel()
}

// endCalls ends the calls in progress for good: the handle is being freed.
func (h *lockHandle) endCalls() { h.calls.Load().cancel() }

// addManager registers a manager and returns its handle.
func addManager(m *lock.Manager) uint64 { return add(&managerHandle{v: m}) }

// addManagedLock registers a lock made by zl_make, or a hold zl_hold
// started, and returns its handle.
func addManagedLock[L *lock.ManagedLock | *hold](l L) uint64 {
	if hd, ok := any(l).(*hold); ok {
		return add(hd.h) // zl_hold's handle, which the hold fills in as it goes
	}
	h := &lockHandle{}
	h.v.Store(any(l).(*lock.ManagedLock))
	h.calls.Store(newCallScope())
	return add(h)
}

// lend registers the lock a callback runs under, with ctx the callback's
// context and cancel the function that ends it.
func lend(l *lock.ManagedLock, ctx context.Context, cancel context.CancelFunc) uint64 {
	h := &lockHandle{lent: true}
	h.v.Store(l)
	h.calls.Store(&callScope{ctx: ctx, cancel: cancel})
	return add(h)
}

func add(h any) uint64 {
	id := lastHandle.Add(1)
	handles.Store(id, h)
	return id
}

// handleError reports a handle that is not in the table, or not of the
// kind a function wants.
type handleError struct {
	id     uint64
	want   string // the C type the function wants
	reason string
}

func (e *handleError) Error() string {
	return fmt.Sprintf("handle %d is not a valid %s: %s", e.id, e.want, e.reason)
}

// kindName is the C type of a handle entry, for messages.
func kindName(h any) string {
	switch h.(type) {
	case *managerHandle:
		return "zl_manager"
	case *lockHandle:
		return "zl_lock"
	}
	return fmt.Sprintf("%T", h)
}

// lookup finds id's entry of kind H.
func lookup[H any](id uint64, want string) (H, error) {
	var zero H
	if testHooks && id == panicHandle {
		panic("test hook: a panic inside the library")
	}
	if id == 0 {
		return zero, &handleError{id, want, "0 is never a handle"}
	}
	v, ok := handles.Load(id)
	if !ok {
		return zero, &handleError{id, want, "unknown, or already freed or closed"}
	}
	h, ok := v.(H)
	if !ok {
		return zero, &handleError{id, want, "it is a " + kindName(v)}
	}
	return h, nil
}

// take removes id's entry of kind H from the table and returns it. Taking
// the entry out before the caller closes what it holds is what makes a
// double free or a close racing with another one fail cleanly: only one of
// them gets the entry.
func take[H any](id uint64, want string) (H, error) {
	h, err := lookup[H](id, want)
	if err != nil {
		return h, err
	}
	if !handles.CompareAndDelete(id, any(h)) {
		var zero H
		return zero, &handleError{id, want, "already freed or closed"}
	}
	return h, nil
}

func resolveManager(id uint64) (*managerHandle, error) {
	return lookup[*managerHandle](id, "zl_manager")
}

func takeManager(id uint64) (*managerHandle, error) {
	return take[*managerHandle](id, "zl_manager")
}

func resolveManagedLock(id uint64) (*lockHandle, error) {
	return lookup[*lockHandle](id, "zl_lock")
}

// takeManagedLock removes a lock handle made by zl_make; the handle lent to
// a callback belongs to the library until the callback returns.
func takeManagedLock(id uint64) (*lockHandle, error) {
	h, err := lookup[*lockHandle](id, "zl_lock")
	if err != nil {
		return nil, err
	}
	if h.lent {
		return nil, &lock.InvalidArgumentError{Field: "l", Reason: "is lent to a running callback; the library frees it when the callback returns"}
	}
	return take[*lockHandle](id, "zl_lock")
}

// liveHandles counts the table's entries, for leak checks in tests.
func liveHandles() int {
	n := 0
	handles.Range(func(any, any) bool {
		n++
		return true
	})
	return n
}

// The C handle types are 64-bit, as the table's ids.
var _ = [1]struct{}{}[C.sizeof_zl_lock-8+C.sizeof_zl_manager-8]
