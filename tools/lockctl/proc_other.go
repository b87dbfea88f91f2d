//go:build !linux

package main

import "syscall"

// commandSysProcAttr is empty where there is no parent-death signal: a
// lockctl killed with SIGKILL there leaves its command running, and the
// lock is freed only when its TTL passes (see proc_linux.go for why that
// matters).
func commandSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
