package main

/*
#include <stdlib.h>
#include "zerotal_lock.h"

const char *zl_cgo_last_error(void);
*/
import "C"

import (
	"context"
	"runtime/debug"
	"sync"

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
func (abiFuncs) Close(h *managerHandle) error { return h.v.Close() }

// Free ends a lock handle the export has already taken out of the table: it
// ends the calls in progress on it (a zl_block waiting on another thread
// returns), then releases the lock if the handle may hold it. A handle that
// never acquired has nothing to release, and one whose key was invalid
// would only report that again.
func (abiFuncs) Free(h *lockHandle) error {
	h.endCalls()
	if h.v.Owner() == "" {
		return nil
	}
	return h.v.Release(context.Background())
}

// Lost reports whether a callback's context has ended.
func (abiFuncs) Lost(h *lockHandle) (bool, error) {
	if !h.lent {
		return false, &lock.InvalidArgumentError{Field: "l", Reason: "was made by zl_make: zl_lost is for the handle a callback receives (use zl_is_acquired)"}
	}
	return h.ctx().Err() != nil, nil
}

// Cancel ends the calls in progress on h.
func (abiFuncs) Cancel(h *lockHandle) error {
	h.cancelCalls()
	return nil
}
