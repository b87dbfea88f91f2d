package main

import "syscall"

// commandSysProcAttr asks the kernel to SIGKILL the command when lockctl
// dies. Without it, a lockctl killed with SIGKILL (or by the OOM killer)
// would leave its command running as an orphan, while the SQLite and file
// drivers, which reclaim at once the locks of dead processes, would see
// lockctl's pid gone and hand the lock to the next caller: two commands
// would run under one lock. With it, the lock and the command die together.
//
// The kernel sends the signal when the thread that started the command
// exits, not the process, so startCommand keeps that goroutine on its OS
// thread until the command has exited (see there). A set-user-ID command
// drops the setting at exec; such a command outlives a killed lockctl.
func commandSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
