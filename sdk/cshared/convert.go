package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	lock "github.com/zerotal/lock/sdk/go"
)

// maxMillis is the longest duration, in milliseconds, a time.Duration holds.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// millis converts milliseconds to a duration, saturating instead of
// overflowing, so that a value out of range stays out of range for the
// engine to reject with the limit (a TTL over 365 days, a negative one).
func millis(ms C.int64_t) time.Duration {
	switch v := int64(ms); {
	case v > maxMillis:
		return math.MaxInt64
	case v < -maxMillis:
		return math.MinInt64
	default:
		return time.Duration(v) * time.Millisecond
	}
}

// unixMillis converts a time to milliseconds since the Unix epoch; the
// zero time, which means "none", is 0.
func unixMillis(t time.Time) C.int64_t {
	if t.IsZero() {
		return 0
	}
	return C.int64_t(t.UnixMilli())
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// copyString writes s into the caller's buffer with the size protocol: *n
// is the buffer's size on entry and the size s needs (NUL included) on
// return; a NULL buf only asks for the size; a buffer too small is left
// untouched.
func copyString(s string, buf *C.char, n *C.size_t) error {
	need := C.size_t(len(s) + 1)
	have := *n
	*n = need
	if buf == nil {
		return nil
	}
	if have < need {
		return &lock.InvalidArgumentError{Field: "buf", Reason: fmt.Sprintf("holds %d bytes and the string needs %d, NUL included", have, need)}
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), need)
	copy(dst, s)
	dst[len(s)] = 0
	return nil
}
