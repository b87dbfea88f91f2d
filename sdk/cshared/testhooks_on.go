//go:build zl_testhooks

package main

import "C"

import "math"

// The test build (go build -tags zl_testhooks) adds what the C and Python
// tests need to see inside the library; the shipped library has none of it.
const (
	testHooks = true
	// panicHandle makes the handle lookup panic, so a test can prove that
	// every export taking a handle contains a panic.
	panicHandle = math.MaxUint64
)

// zl_test_live_handles counts the handle table's entries, for leak checks.
//
//export zl_test_live_handles
func zl_test_live_handles() C.int { return C.int(liveHandles()) }
