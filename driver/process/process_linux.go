package process

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Scope identifies this boot, this process's pid namespace and its time
// namespace. A (pid, start time) recorded by another process names the same
// process only when it was recorded in the same scope. It is "" when it
// cannot be read. Kernels without time namespaces (before 5.6) have no
// /proc/self/ns/time; every process there shares the one timeline.
func Scope() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	pidNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(boot))
	if id == "" || pidNS == "" {
		return ""
	}
	scope := id + "/" + pidNS
	switch timeNS, err := os.Readlink("/proc/self/ns/time"); {
	case err == nil:
		scope += "/" + timeNS
	case !errors.Is(err, os.ErrNotExist):
		return "" // there is a time namespace, but which is unknown
	}
	return scope
}

// StartTime returns the start time of pid in clock ticks after boot, as this
// process's time namespace shows it, or 0 when it cannot be read.
func StartTime(pid int) uint64 {
	start, _, err := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return start
}

// errBadStat reports a stat file this parser does not understand.
var errBadStat = errors.New("malformed /proc stat")

// readStat parses a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file for
// the state (field 3) and the start time (field 22). The command name (field
// 2) may hold spaces and parentheses, so fields are counted from the last
// ')'.
func readStat(path string) (start uint64, state byte, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errBadStat
	}
	fields := strings.Fields(string(b[i+1:]))
	const stateField, startField = 3, 22
	if len(fields) <= startField-stateField || len(fields[0]) != 1 {
		return 0, 0, errBadStat
	}
	start, err = strconv.ParseUint(fields[startField-stateField], 10, 64)
	if err != nil || start == 0 {
		return 0, 0, errBadStat
	}
	return start, fields[0][0], nil
}

// dead reports whether a thread state means the thread has exited: a zombie
// (exited, not yet collected) or dead.
func dead(state byte) bool { return state == 'Z' || state == 'X' }

// Exited reports whether the process recorded as (pid, start), in this
// scope, has certainly exited: no such pid, every thread of it exited (a
// zombie waiting for its parent), or a pid now used by a process that
// started at another time (the pid was recycled). A start of 0 means it was
// not recorded; then only a missing pid counts.
func Exited(pid int, start uint64) bool {
	if pid <= 0 || pid > math.MaxInt32 {
		return false
	}
	// kill(pid, 0) sends nothing; ESRCH is the kernel saying no such
	// process, EPERM proves it exists. /proc alone could lie: with
	// hidepid, other users' processes are missing from it.
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	} else if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	now, state, err := readStat(dir + "/stat")
	if err != nil {
		// It may have exited between the two looks, or /proc hides it:
		// ask the kernel again rather than guess.
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	if start != 0 && now != start {
		return true
	}
	if !dead(state) {
		return false
	}
	// The thread-group leader has exited; the process lives on while any
	// other thread does.
	return !anyThreadAlive(dir)
}

// anyThreadAlive reports whether a thread of the process at dir has not
// exited. Anything it cannot read counts as alive.
func anyThreadAlive(dir string) bool {
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, t := range tasks {
		_, state, err := readStat(dir + "/task/" + t.Name() + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			continue // that thread ended as we looked
		}
		if err != nil || !dead(state) {
			return true
		}
	}
	return false
}
