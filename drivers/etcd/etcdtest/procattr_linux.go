package etcdtest

import "syscall"

// sysProcAttr has the kernel kill a member when the test process dies, so
// that a crashed or timed-out test leaves no etcd running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
