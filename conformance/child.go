package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zerotal/lock/driver"
)

// The environment through which the crash test tells a child process what to
// do. envChild marks the process as a child; the others say what to take.
const (
	envChild      = "ZEROTAL_CONFORMANCE_CHILD"
	envChildKey   = "ZEROTAL_CONFORMANCE_CHILD_KEY"
	envChildOwner = "ZEROTAL_CONFORMANCE_CHILD_OWNER"
	envChildTTL   = "ZEROTAL_CONFORMANCE_CHILD_TTL"
)

const (
	// childHeld is the line a child prints once it holds the lock.
	childHeld = "held"
	// childAcquireTimeout bounds the child's open and Acquire.
	childAcquireTimeout = 30 * time.Second
	// childLifetime bounds how long a child waits to be killed, so that a
	// child whose parent vanished without closing its stdin still goes.
	childLifetime = 2 * time.Minute
)

// Exit codes of a child process, for the parent's failure message.
const (
	childExitBadEnv   = 2
	childExitFailed   = 3
	childExitOrphaned = 4
)

// Child must be called first thing in TestMain by a driver test package whose
// Harness sets ChildEnv. In a child process started by the crash test it never
// returns; otherwise it returns at once.
//
// In a child, Child opens the backend with open (which reads what it needs
// from the variables ChildEnv returned), acquires the key the parent chose,
// prints "held" on its own line to stdout and waits to be killed, without
// ever releasing. It exits by itself, still without releasing, when its stdin
// closes (the parent died) or after two minutes.
func Child(open func() (driver.Driver, error)) {
	if os.Getenv(envChild) == "" {
		return
	}
	os.Exit(runChild(open))
}

// runChild is the child's life, returning its exit code.
func runChild(open func() (driver.Driver, error)) int {
	key, owner := os.Getenv(envChildKey), os.Getenv(envChildOwner)
	ttl, err := time.ParseDuration(os.Getenv(envChildTTL))
	if key == "" || owner == "" || err != nil || open == nil {
		fmt.Fprintf(os.Stderr, "conformance child: incomplete environment (%s=%q, %s=%q, %s=%q, open func set: %v)\n",
			envChildKey, key, envChildOwner, owner, envChildTTL, os.Getenv(envChildTTL), open != nil)
		return childExitBadEnv
	}
	d, err := open()
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance child: opening the backend: %v\n", err)
		return childExitFailed
	}
	ctx, cancel := context.WithTimeout(context.Background(), childAcquireTimeout)
	defer cancel()
	ok, err := d.Acquire(ctx, key, owner, ttl)
	if err != nil || !ok {
		fmt.Fprintf(os.Stderr, "conformance child: Acquire(%q, %s, %v) = %v, %v; want true, nil\n", key, owner, ttl, ok, err)
		return childExitFailed
	}
	fmt.Println(childHeld)
	orphaned := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	timer := time.NewTimer(childLifetime)
	select {
	case <-orphaned:
	case <-timer.C:
	}
	return childExitOrphaned
}
