package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The command's whole process tree runs under the lock, not just the
// command: a shell script's children hold the lock as much as the shell.
// lockctl therefore runs the command in a process group apart from
// lockctl's, signals that group (not just the command) on a lost lock,
// stops what the command left running in it when the command exits (as
// systemd stops a service's control group), and has a guard process that
// stops the group if lockctl itself dies: the kernel's parent-death signal
// reaches only the command, and the drivers that see a dead holder free its
// lock at once, so without the guard the next run would overlap the
// previous run's grandchildren. The group is made, and the guard told of it,
// before the command starts (see tree), so that no moment exists when the
// command runs and the guard does not know its group.
//
// A process group rather than a cgroup, because cgroups need privileges or
// a delegated subtree that an ordinary user running cron jobs does not have;
// and a guard rather than a subreaper, because a subreaper dies with
// lockctl. The cost: a process that leaves the group on purpose (setsid, as
// daemons do when they detach) is not stopped, and runs on outside the lock.
//
// The exception is a command run in the foreground of a terminal, which
// must stay in lockctl's group to read the terminal and take part in job
// control (^Z, fg). There the guard stops lockctl's group, when lockctl
// leads it (it is the shell's job), and nothing otherwise.

// guardRole and leaderRole are the hidden commands of the guard and of the
// group's first leader.
const (
	guardRole  = "__guard"
	leaderRole = "__leader"
)

// tree is the process tree of one command.
//
// The group the command runs in exists before the command: a placeholder
// process (the leader) starts in a new group, the command joins that group,
// and the leader is killed once the command has started. So the group's id
// is known, and the guard told of it, before the command runs: were the
// group the command's own, its id would be known only once the command
// runs, and a lockctl killed between the two would leave a guard that knows
// no group while the command's children run on. The guard cannot be the
// leader itself: it must stay out of the group, or the group would never
// be empty and the signals lockctl sends the group would reach it. Both
// helpers start before the wait for the lock, so a hand-off does not wait
// for them.
type tree struct {
	own         bool          // the command runs in a group apart from lockctl's
	pgid        int           // the group the tree lives in; 0 until known
	guard       *os.File      // the write end of the guard's pipe; nil without a guard
	guardEnded  chan struct{} // closed once the guard has exited and been reaped
	leader      *os.Process   // the group's placeholder leader, until the command started
	leaderEnded chan struct{} // closed once the leader has exited and been reaped
}

// newTree decides where the command will run, and starts the helpers: the
// group's placeholder leader, when the command gets a group of its own, and
// the guard. Without them (lockctl's executable cannot be run again) the
// command leads a group of its own, and only the parent-death signal stops
// it if lockctl dies at its start.
func newTree(grace time.Duration) *tree {
	t := &tree{own: !inTerminalForeground()}
	exe, err := os.Executable()
	if err != nil {
		return t
	}
	if t.own {
		t.startLeader(exe)
	}
	t.startGuard(exe, grace)
	return t
}

// startLeader starts the placeholder that makes the command's group.
func (t *tree) startLeader(exe string) {
	l := exec.Command(exe, leaderRole)
	a := commandSysProcAttr() // it dies with lockctl, like the command
	a.Setpgid = true
	l.SysProcAttr = a
	if l.Start() != nil {
		return
	}
	t.leader, t.leaderEnded, t.pgid = l.Process, make(chan struct{}), l.Process.Pid
	go func() { _ = l.Wait(); close(t.leaderEnded) }()
}

// startGuard starts the guard and tells it the group, when it is known.
func (t *tree) startGuard(exe string, grace time.Duration) {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	g := exec.Command(exe, guardRole, strconv.FormatInt(int64(grace), 10))
	g.ExtraFiles = []*os.File{r}
	// A group of its own: a kill of lockctl's group, or a key typed on
	// lockctl's terminal, does not reach it.
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = g.Start()
	r.Close()
	if err != nil {
		w.Close()
		return
	}
	t.guard, t.guardEnded = w, make(chan struct{})
	go func() { _ = g.Wait(); close(t.guardEnded) }() // reap it whenever it ends
	if !t.own && syscall.Getpgrp() == os.Getpid() {
		t.pgid = os.Getpid() // lockctl leads the terminal's job: the guard stops that
	}
	t.tellGuard()
}

// tellGuard sends the guard the group to stop if lockctl dies.
func (t *tree) tellGuard() {
	if t.guard != nil && t.pgid > 0 {
		fmt.Fprintf(t.guard, "%d\n", t.pgid)
	}
}

// attr returns the process attributes that put the command where t says:
// into the leader's group, or a new group of its own without a leader.
func (t *tree) attr() *syscall.SysProcAttr {
	a := commandSysProcAttr()
	a.Setpgid = t.own
	if t.leader != nil {
		a.Pgid = t.pgid
	}
	return a
}

// startFailed is told that the command could not start. When the leader's
// group was to blame (the leader died early, and its group with it), the
// command gets a group of its own instead, and it reports whether to try
// again.
func (t *tree) startFailed() (retry bool) {
	if t.leader == nil {
		return false
	}
	t.endLeader()
	t.pgid = 0
	return true
}

// started records the command's pid. Its group is in use now, so the
// leader can go; without a leader the group is the command's own, and the
// guard learns of it only now.
func (t *tree) started(pid int) {
	switch {
	case t.leader != nil:
		t.endLeader()
	case t.own:
		t.pgid = pid
		t.tellGuard()
	default:
		t.pgid = syscall.Getpgrp()
	}
}

// endLeader kills the placeholder leader; its exit is awaited where the
// group must be empty of it (stopLeftovers).
func (t *tree) endLeader() {
	if t.leader != nil {
		_ = t.leader.Kill()
		t.leader = nil
	}
}

// signal sends sig to the command's tree: its group when it has one of its
// own, the command alone otherwise.
func (t *tree) signal(p *os.Process, sig syscall.Signal) {
	if t.own && t.pgid > 0 {
		_ = syscall.Kill(-t.pgid, sig) // an error means the group is gone
		return
	}
	_ = p.Signal(sig)
}

// stopLeftovers stops what the command left running in its group when it
// exited: SIGTERM, then SIGKILL after grace. The lock is released only
// after, so nothing the command started outlives it.
func (t *tree) stopLeftovers(grace time.Duration) {
	if !t.own || t.pgid <= 0 {
		return
	}
	if t.leaderEnded != nil {
		<-t.leaderEnded // killed when the command started; a member until reaped
	}
	if groupGone(t.pgid) {
		return
	}
	stopGroup(t.pgid, grace)
}

// done tells the guard that lockctl is finishing normally, and closes its
// pipe; it also ends a leader whose command never started.
func (t *tree) done() {
	t.endLeader()
	if t.guard != nil {
		fmt.Fprintln(t.guard, "done")
		t.guard.Close()
		t.guard = nil
	}
}

// stopGroup sends the group SIGTERM and, if it is still there after grace,
// SIGKILL.
func stopGroup(pgid int, grace time.Duration) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(grace)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupGone reports whether no process of the group is left.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// runGuard is the guard process: it learns the group to watch over from its
// pipe (fd 3) and stops it if the pipe closes before lockctl says "done":
// lockctl has died without finishing.
func runGuard(args []string) int {
	if len(args) != 1 {
		return exitUsage
	}
	grace, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return exitUsage
	}
	// Only the pipe ends the guard: the signals of lockctl's terminal or
	// session must not, or it could not outlive lockctl.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP)
	in := bufio.NewReader(os.NewFile(3, "lockctl"))
	pgid := 0
	for {
		line, err := in.ReadString('\n')
		line = strings.TrimSpace(line)
		switch {
		case line == "done":
			return exitOK
		case line != "":
			if n, err := strconv.Atoi(line); err == nil && n > 1 {
				pgid = n
			}
		}
		if err != nil { // lockctl is gone
			if pgid > 0 {
				stopGroup(pgid, time.Duration(grace))
			}
			return exitOK
		}
	}
}

// runLeader is the placeholder leader: it only has to exist, in its group,
// until lockctl kills it once the command has joined the group.
func runLeader() int {
	for {
		time.Sleep(time.Hour)
	}
}
