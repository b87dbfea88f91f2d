package main

/*
#include <stddef.h>

void zl_cgo_set_last_error(const char *msg, size_t n);
const char *zl_cgo_last_error(void);
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"

	lock "github.com/zerotal/lock/sdk/go"
)

// fail records err as the calling thread's last error, prefixed with the
// function's name, and returns its code.
func fail(fn string, err error) C.int {
	setLastError(fn + ": " + inCTerms(err))
	return C.int(codeOf(err))
}

// inCTerms is err's message as a C program should read it: a bad field of
// the configuration is named by its JSON member ("redis.url"), the way
// zl_open takes it, not by the Go struct field ("Config.Redis.URL").
func inCTerms(err error) string {
	msg := err.Error()
	var iae *lock.InvalidArgumentError
	if errors.As(err, &iae) {
		if member, ok := configMemberNames()[iae.Field]; ok {
			msg = strings.Replace(msg, iae.Field, "config member \""+member+"\"", 1)
		}
	}
	return msg
}

// configMemberNames maps the Go name of every field of lock.Config
// ("Config.Redis.URL") to its JSON member ("redis.url"), from the struct's
// json tags.
var configMemberNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	var walk func(t reflect.Type, goPath, jsonPath string)
	walk = func(t reflect.Type, goPath, jsonPath string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			g, j := goPath+"."+f.Name, strings.TrimPrefix(jsonPath+"."+name, ".")
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, g, j)
				continue
			}
			names[g] = j
		}
	}
	walk(reflect.TypeOf(lock.Config{}), "Config", "")
	return names
})

// codeOf is lock.CodeOf, plus the C ABI's own errors.
func codeOf(err error) lock.Code {
	var he *handleError
	if errors.As(err, &he) {
		return lock.CodeInvalidHandle
	}
	return lock.CodeOf(err)
}

// setLastError copies msg into the calling thread's last-error buffer. The
// C side copies during the call, so passing the string's bytes is safe and
// allocates nothing.
func setLastError(msg string) {
	C.zl_cgo_set_last_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
}

// nullArgument is the error for a NULL pointer where one is required.
func nullArgument(name string) error {
	return &lock.InvalidArgumentError{Field: name, Reason: "must not be NULL"}
}

// callbackError is a callback's non-zero return value.
type callbackError struct{ rc int }

func (e *callbackError) Error() string {
	return fmt.Sprintf("the callback returned %d", e.rc)
}

// recoverCode, deferred first in every export that returns a code, turns a
// panic into ZL_INTERNAL: a bug in the library must never take the host
// process down.
func recoverCode(code *C.int, fn string) {
	if v := recover(); v != nil {
		*code = C.int(lock.CodeInternal)
		reportPanic(fn, v)
	}
}

// recoverInt is recoverCode for an export returning an int value: 0.
func recoverInt(ret *C.int, fn string) {
	if v := recover(); v != nil {
		*ret = 0
		reportPanic(fn, v)
	}
}

// recoverString is recoverCode for an export returning a string: the
// internal error's description, which is static.
func recoverString(ret **C.char, fn string) {
	if v := recover(); v != nil {
		*ret = abi.StrError(lock.CodeInternal)
		reportPanic(fn, v)
	}
}

// stackOnce limits the stack dump to the first panic: one is what a bug
// report needs, and a host that keeps calling should not flood stderr.
var stackOnce sync.Once

func reportPanic(fn string, v any) {
	setLastError(fmt.Sprintf("%s: internal error: panic: %v (a bug in zerotal lock: please report it)", fn, v))
	stackOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "zerotal lock: %s: panic: %v (contained; the call returned ZL_INTERNAL)\n%s", fn, v, debug.Stack())
	})
}
