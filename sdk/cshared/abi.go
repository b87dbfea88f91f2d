package main

/*
#include <stdlib.h>
#include "zerotal_lock.h"

const char *zl_cgo_last_error(void);
*/
import "C"

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

// abiFuncs implements the functions only the C ABI has (the spec's ABI
// interface); the generated exports call its methods.
type abiFuncs struct{}

var abi abiFuncs

// Version returns the module version Go's build information records, made
// a C string once: it is static for the caller.
func (abiFuncs) Version() *C.char { return versionC() }

var versionC = sync.OnceValue(func() *C.char {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && v == "(devel)" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return C.CString(v) // lives as long as the process: static for the caller
})

// ABIVersion is the header's ZL_ABI_VERSION, which the library was built
// with.
func (abiFuncs) ABIVersion() int { return C.ZL_ABI_VERSION }

// StrError returns code's description from codeTexts, made C strings once.
func (abiFuncs) StrError(code lock.Code) *C.char {
	if s, ok := codeTextsC()[code]; ok {
		return s
	}
	return unknownCodeC()
}

var codeTextsC = sync.OnceValue(func() map[lock.Code]*C.char {
	m := make(map[lock.Code]*C.char, len(codeTexts))
	for code, text := range codeTexts {
		m[code] = C.CString(text) // static for the caller
	}
	return m
})

var unknownCodeC = sync.OnceValue(func() *C.char { return C.CString("unknown error code") })

// LastError returns the calling thread's buffer.
func (abiFuncs) LastError() *C.char { return C.zl_cgo_last_error() }

// Close closes a manager the export has already taken out of the table.
// The holds' goroutines end once Close has cancelled them; they are waited
// for before the notification descriptors close, so that a reader that
// sees end-of-file knows every hold has ended.
func (abiFuncs) Close(h *managerHandle) error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	err := h.v.Close()
	h.holds.Wait()
	h.notify.close()
	return err
}

// Free ends a lock handle the export has already taken out of the table: it
// ends the calls in progress on it (a zl_block waiting on another thread
// returns), then releases the lock. Release waits for those calls to return,
// since the handle serialises its operations, so a key granted to one of
// them at the last moment is released too: after Free, nothing the handle
// started holds a key. A handle whose key or TTL was invalid never held one,
// and Release would only report that again.
func (abiFuncs) Free(h *lockHandle) error {
	if h.hold != nil {
		return h.hold.end()
	}
	h.endCalls()
	l := h.value()
	err := l.Release(context.Background())
	if errors.Is(err, lock.ErrInvalidArgument) && l.Owner() == "" {
		return nil
	}
	return err
}

// Lost reports whether a callback's context has ended.
func (abiFuncs) Lost(h *lockHandle) (bool, error) {
	if h.hold != nil {
		return h.hold.lost(), nil
	}
	if !h.lent {
		return false, &lock.InvalidArgumentError{Field: "l", Reason: "was made by zl_make: zl_lost is for the handle a callback receives (use zl_is_acquired)"}
	}
	return h.ctx().Err() != nil, nil
}

// Cancel ends the calls in progress on h.
func (abiFuncs) Cancel(h *lockHandle) error {
	if h.hold != nil {
		h.hold.cancel()
		return nil
	}
	h.cancelCalls()
	return nil
}

// Hold starts a hold; see hold.go.
func (abiFuncs) Hold(m *managerHandle, key string, ttl time.Duration, opts ...lock.Option) (*hold, error) {
	return startHold(m, key, ttl, opts), nil
}

// HoldDone reports whether a hold has ended.
func (abiFuncs) HoldDone(h *lockHandle) (bool, error) {
	if h.hold == nil {
		return false, &lock.InvalidArgumentError{Field: "l", Reason: "was not made by zl_hold"}
	}
	return h.hold.ended(), nil
}

// NotifyFD hands out a new notification descriptor of the manager.
func (abiFuncs) NotifyFD(m *managerHandle) (int, error) { return m.notify.open() }
