package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
)

const (
	// crashTTL is the TTL of a lock whose holder vanishes. The killed
	// process variant needs the lock to outlive the child's start-up and
	// the parent's check that it is held.
	crashTTL        = 300 * time.Millisecond
	crashProcessTTL = time.Second
	// childStartBound is how long a child may take to start, open the
	// backend and report that it holds the lock.
	childStartBound = 20 * time.Second
)

// testCrash checks that a holder that vanishes without releasing does not
// keep the key past its TTL: an abandoned instance in this process, and,
// when the backend spans processes, a killed child process.
func testCrash(e *env) {
	e.sub("AbandonedInstance", func(e *env) {
		gone, survivor := e.open(), e.open()
		key, owner, next := e.key("abandoned"), newOwner(), newOwner()
		e.mustAcquire(gone, key, owner, crashTTL)
		acquired := time.Now()
		// gone is neither released nor closed from here on (the harness's
		// cleanup closes it after the subtest).
		deadline := acquired.Add(crashTTL + e.slack)
		if !e.pollUntil(deadline, func() bool { return e.acquire(survivor, key, next, hold) }) {
			e.t.Errorf("Acquire(%s) still failing %v after its holder's instance was abandoned with TTL %v (ExpirySlack %v)",
				show(key), time.Since(acquired).Round(time.Millisecond), crashTTL, e.slack)
			return
		}
		e.release(survivor, key, next)
	})
	e.sub("KilledProcess", func(e *env) {
		if e.h.ChildEnv == nil {
			e.t.Skip("Harness.ChildEnv is nil: the backend does not span processes (set ChildEnv and call conformance.Child in TestMain to run this)")
		}
		testKilledProcess(e)
	})
}

// testKilledProcess has a child process take a lock, kills it with SIGKILL,
// and checks that the key frees no later than TTL + ExpirySlack after the
// child said it held it.
func testKilledProcess(e *env) {
	d := e.open()
	key, owner, next := e.key("killed"), newOwner(), newOwner()
	cmd := exec.CommandContext(e.ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), e.h.ChildEnv(e.t)...)
	cmd.Env = append(cmd.Env,
		envChild+"=1",
		envChildKey+"="+key,
		envChildOwner+"="+owner,
		envChildTTL+"="+crashProcessTTL.String(),
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // held open until the kill: the child leaves when it closes
	if err != nil {
		e.t.Fatalf("child stdin: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatalf("child stdout: %v", err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("starting child %s: %v", os.Args[0], err)
	}
	held := make(chan struct{})
	var (
		readDone sync.WaitGroup
		output   strings.Builder // stdout lines other than "held", for failure messages
	)
	readDone.Go(func() {
		scanner := bufio.NewScanner(stdout)
		seen := false
		for scanner.Scan() {
			if line := scanner.Text(); line == childHeld && !seen {
				seen = true
				close(held)
			} else {
				fmt.Fprintln(&output, line)
			}
		}
	})
	// reap kills the child, if it still runs, and collects it, once; the
	// cleanup covers a subtest that ends early.
	var (
		reapOnce sync.Once
		waitErr  error
	)
	reap := func() error {
		reapOnce.Do(func() {
			cmd.Process.Kill()
			readDone.Wait() // Wait must not close stdout before the reader is done
			stdin.Close()
			waitErr = cmd.Wait()
		})
		return waitErr
	}
	e.t.Cleanup(func() { reap() })
	exited := make(chan struct{})
	go func() { readDone.Wait(); close(exited) }()
	timer := time.NewTimer(childStartBound)
	defer timer.Stop()
	select {
	case <-held:
	case <-exited:
		err := reap()
		e.t.Fatalf("the child exited (%v) without saying %q. Is conformance.Child(open) the first call in the package's TestMain?\nstdout:\n%s\nstderr:\n%s",
			err, childHeld, output.String(), stderr.String())
	case <-timer.C:
		err := reap()
		e.t.Fatalf("the child did not say %q within %v (then: %v)\nstdout:\n%s\nstderr:\n%s",
			childHeld, childStartBound, err, output.String(), stderr.String())
	}
	heldAt := time.Now()

	// The child's Acquire was sent after the start, so the key is held
	// until at least started+TTL.
	locked := e.exists(d, key)
	var holder driver.Holder
	if in, ok := d.(driver.Inspector); ok {
		holder, _ = e.inspect(in, key)
	}
	if done := time.Now(); done.Before(started.Add(crashProcessTTL)) {
		if !locked {
			e.t.Errorf("Exists(%s) = false right after the child process said it held the key, want true", show(key))
		}
		if holder.PID != 0 && holder.PID != cmd.Process.Pid {
			e.t.Errorf("Holder.PID = %d, want 0 (unknown) or the child's pid %d", holder.PID, cmd.Process.Pid)
		}
	} else {
		e.t.Logf("not checking that the child holds the key: %s", late(done, started.Add(crashProcessTTL)))
	}

	if err := reap(); err == nil {
		e.t.Fatalf("the child exited cleanly instead of being killed\nstderr:\n%s", stderr.String())
	}
	killed := time.Now()
	// Earlier is fine: a backend may notice the dead process.
	deadline := heldAt.Add(crashProcessTTL + e.slack)
	if !e.pollUntil(deadline, func() bool { return e.acquire(d, key, next, hold) }) {
		e.t.Errorf("Acquire(%s) still failing %v after the child that held it with TTL %v was killed (%v after it said it held it; ExpirySlack %v)",
			show(key), time.Since(killed).Round(time.Millisecond), crashProcessTTL, time.Since(heldAt).Round(time.Millisecond), e.slack)
		return
	}
	e.release(d, key, next)
}
