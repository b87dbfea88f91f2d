package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwardedSignals are the signals lockctl catches and passes to its
// command. Catching SIGQUIT also spares the user the Go runtime's goroutine
// dump, which is what an uncaught SIGQUIT prints.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// interruptedError is the cause of a run ended by a signal before its
// command started.
type interruptedError struct{ sig syscall.Signal }

func (e *interruptedError) Error() string { return "interrupted by " + signalName(e.sig) }

// signalRouter decides what a signal sent to lockctl does, by phase:
//
//   - waiting for the lock: it ends the wait (cancel), and lockctl exits
//     with 128+n without running the command;
//   - starting the command: it is kept, and delivered once the command
//     exists;
//   - running the command: it is forwarded to the command, and lockctl
//     keeps waiting for the command to exit, then releases the lock;
//   - after the command exited: it is ignored, so that the release is not
//     cut short.
//
// In the foreground of a terminal, the command runs in lockctl's own process
// group (see tree.go), so that it can read the terminal and job control (^Z,
// fg) treats the pair as one job. The price is that keys typed on a terminal
// (^C, ^\) signal the whole foreground group, the command included:
// forwarding those as well would deliver them twice, and many programs take
// a second SIGINT as "stop now, skip the cleanup". So SIGINT and SIGQUIT are
// not forwarded while lockctl's group is the foreground group of its
// controlling terminal: the terminal has delivered them already. Elsewhere
// the command has a group of its own, and every signal goes to that group. The cost is that `kill -INT <lockctl pid>`
// from elsewhere does not reach a command in the foreground of a terminal;
// signal the process group, or send SIGTERM, which is always forwarded.
type signalRouter struct {
	ch     chan os.Signal
	done   chan struct{}
	cancel context.CancelCauseFunc // ends the wait for the lock

	mu      sync.Mutex
	phase   routerPhase
	send    func(syscall.Signal) // delivers to the running command's tree
	pending []syscall.Signal
}

type routerPhase int

const (
	phaseWaiting routerPhase = iota
	phaseStarting
	phaseRunning
	phaseFinished
)

// newSignalRouter starts catching forwardedSignals. cancel ends the wait for
// the lock. Call stop when the run is over.
func newSignalRouter(cancel context.CancelCauseFunc) *signalRouter {
	r := &signalRouter{ch: make(chan os.Signal, 8), done: make(chan struct{}), cancel: cancel}
	for _, sig := range forwardedSignals {
		// A signal ignored when lockctl started (SIGHUP under nohup,
		// SIGINT in a background job of a script) stays ignored, and the
		// command inherits that: catching it would undo it for both.
		if !signal.Ignored(sig) {
			signal.Notify(r.ch, sig)
		}
	}
	go r.loop()
	return r
}

func (r *signalRouter) loop() {
	defer close(r.done)
	for s := range r.ch {
		r.route(s.(syscall.Signal))
	}
}

func (r *signalRouter) route(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.phase {
	case phaseWaiting:
		r.cancel(&interruptedError{sig: sig})
	case phaseStarting:
		r.pending = append(r.pending, sig)
	case phaseRunning:
		forward(r.send, sig)
	}
}

// beginCommand moves to the starting phase, unless a signal has already
// ended the wait; it reports whether the command may start.
func (r *signalRouter) beginCommand(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	r.phase = phaseStarting
	return true
}

// attach forwards signals with send from now on, starting with those that
// came while the command was being started.
func (r *signalRouter) attach(send func(syscall.Signal)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.send = phaseRunning, send
	for _, sig := range r.pending {
		forward(send, sig)
	}
	r.pending = nil
}

// finish stops forwarding: the command has exited, or never started.
func (r *signalRouter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.send, r.pending = phaseFinished, nil, nil
}

// stop stops catching signals. Signals that come after it have their
// default effect.
func (r *signalRouter) stop() {
	signal.Stop(r.ch)
	close(r.ch)
	<-r.done
}

// forward sends sig with send, unless the terminal has sent it to the
// command already.
func forward(send func(syscall.Signal), sig syscall.Signal) {
	if (sig == syscall.SIGINT || sig == syscall.SIGQUIT) && inTerminalForeground() {
		return
	}
	send(sig)
}

// inTerminalForeground reports whether lockctl's process group is the
// foreground group of its controlling terminal: then a SIGINT or SIGQUIT it
// receives came, as far as can be told, from a key typed on that terminal,
// which sent it to the command as well. It is asked when the signal comes,
// because the shell moves jobs between foreground and background (fg, bg).
func inTerminalForeground() bool {
	tty, err := os.Open("/dev/tty") // ENXIO: no controlling terminal
	if err != nil {
		return false
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}

// signalName is a signal's conventional name, such as SIGTERM.
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}
