package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain owns the directory the library is built into once for every
// test, and checks that no goroutine outlives the tests (the cross-runtime
// test runs a Go contender in this process).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zerotal-cshared-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
