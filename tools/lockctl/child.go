package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// child is the command lockctl runs under the lock.
type child struct {
	cmd    *exec.Cmd
	tree   *tree      // the command and what it starts
	exited chan error // receives cmd.Wait's result once
}

// lookCommand finds the command as a shell would, so that a command that
// cannot run is reported, with a shell's status, before any lock is taken.
func lookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", fail(exitNotFound, "%s: command not found", name)
	}
	return "", fail(exitNoExec, "%s: cannot run: %v", name, err)
}

// startCommand starts argv (argv[0] found at path) with lockctl's standard
// files and the given environment.
//
// It starts the command from a goroutine locked to its OS thread, which
// stays locked until the command has exited: the parent-death signal
// (commandSysProcAttr) fires when the thread that forked the command ends,
// and the Go runtime may end an idle thread, so an unlocked start could kill
// the command while lockctl lives.
func startCommand(path string, argv, environ []string, t *tree) (*child, error) {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         environ,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: t.attr(),
	}
	c := &child{cmd: cmd, tree: t, exited: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		if err != nil && t.startFailed() {
			// The leader's group is gone (someone killed the leader):
			// the command takes a group of its own, as without one.
			cmd = cloneCmd(cmd, t.attr())
			c.cmd = cmd
			err = cmd.Start()
		}
		if err != nil {
			started <- err
			return
		}
		t.started(cmd.Process.Pid)
		started <- nil
		c.exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fail(exitNotFound, "%s: %v", argv[0], err)
		}
		return nil, fail(exitNoExec, "%s: %v", argv[0], err)
	}
	return c, nil
}

// cloneCmd is a fresh copy of an unstarted command that failed to start,
// with other process attributes: an exec.Cmd cannot be started twice.
func cloneCmd(cmd *exec.Cmd, attr *syscall.SysProcAttr) *exec.Cmd {
	return &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: attr}
}

// signal sends sig to the command's tree.
func (c *child) signal(sig syscall.Signal) { c.tree.signal(c.cmd.Process, sig) }

// stopOnLoss waits for the command to exit. If ctx ends first (the lock was
// lost), it calls onLoss, sends the command's tree SIGTERM and, if the
// command has not exited after grace, SIGKILL, then waits for it to exit.
// Either way it then stops what the command left running in its group. It
// returns the command's exit status, as a shell reports it.
func (c *child) stopOnLoss(ctx context.Context, grace time.Duration, onLoss func(), onKill func()) int {
	defer c.tree.stopLeftovers(grace)
	select {
	case <-c.exited:
		return c.status()
	case <-ctx.Done():
	}
	onLoss()
	c.signal(syscall.SIGTERM) // an error means it has just exited
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.exited:
		return c.status()
	case <-t.C:
	}
	onKill()
	c.signal(syscall.SIGKILL)
	<-c.exited
	return c.status()
}

// status is the exit status of the exited command as a shell reports it:
// its own, or 128+n when signal n killed it.
func (c *child) status() int {
	if c.cmd.ProcessState == nil {
		// Wait failed without reaping the command: nothing to report but
		// that lockctl could not tell.
		return exitSoftware
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return exitSignal + int(ws.Signal())
	}
	return c.cmd.ProcessState.ExitCode()
}
