package main

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// notPrivate says why fi, a file or directory of lockctl's default state,
// is not this user's alone; "" when it is.
func notPrivate(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "it is a symbolic link"
	case !ok:
		return ""
	case int(st.Uid) != os.Geteuid() && st.Uid != 0:
		return fmt.Sprintf("it belongs to user %d", st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("others can write to it (mode %04o)", fi.Mode().Perm())
	}
	return ""
}
