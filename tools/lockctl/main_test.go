package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// lockctlBin is the lockctl binary under test, built by TestMain from this
// package's source. The end-to-end tests run it as a real process, the way
// users and scripts do.
var lockctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockctl tests:", err)
		os.Exit(2)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		lockctlBin = filepath.Join(dir, "lockctl")
		// A race-enabled test run builds a race-enabled binary, so that a
		// data race inside lockctl fails the end-to-end tests as well.
		args := []string{"build", "-o", lockctlBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, ".")...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "lockctl tests: building lockctl:", err)
			return 2
		}
		return m.Run()
	}()
	os.Exit(code)
}
