//go:build !zl_testhooks

package main

// Without the zl_testhooks build tag, the library has no test hooks and the
// checks for them compile away.
const (
	testHooks   = false
	panicHandle = 0
)
