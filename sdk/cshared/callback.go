package main

/*
#include "zerotal_lock.h"

int zl_cgo_call(zl_callback fn, zl_lock l, void *user_data);
*/
import "C"

import (
	"context"
	"errors"
	"unsafe"

	lock "github.com/zerotal/lock/sdk/go"
)

// callbackRun is one zl_try or zl_block_run: the C callback and its user
// data, and the context the call runs with, which zl_cancel on the lent
// handle ends.
type callbackRun struct {
	ctx      context.Context
	cancel   context.CancelFunc
	cb       C.zl_callback
	userData unsafe.Pointer
	fn       func(context.Context) error // run, as the Go API takes it
}

// startRun prepares a run of cb; the caller defers end.
func startRun(cb C.zl_callback, userData unsafe.Pointer) *callbackRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &callbackRun{ctx: ctx, cancel: cancel, cb: cb, userData: userData}
	r.fn = r.run
	return r
}

// end releases the run's context.
func (r *callbackRun) end() { r.cancel() }

// run calls the C callback under the lock, on the calling thread (a Go
// export's goroutine stays on its C thread, so the callback runs on the
// thread that called zl_try). The callback gets a handle lent for the call:
// its accessors work, zl_lost reports the end of ctx, and the handle leaves
// the table when the callback returns.
func (r *callbackRun) run(ctx context.Context) error {
	l, ok := lock.FromContext(ctx)
	if !ok {
		return errors.New("the engine ran the callback without its lock in the context")
	}
	id := lend(l, ctx, r.cancel)
	defer handles.Delete(id)
	if rc := C.zl_cgo_call(r.cb, C.zl_lock(id), r.userData); rc != 0 {
		return &callbackError{rc: int(rc)}
	}
	return nil
}
