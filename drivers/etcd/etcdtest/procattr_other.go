//go:build !linux

package etcdtest

import "syscall"

// sysProcAttr is nil where the kernel cannot kill a member with its parent:
// the test's cleanup kills it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
