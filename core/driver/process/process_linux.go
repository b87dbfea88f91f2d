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

// Scope identifies this boot and this process's pid namespace. A (pid, start
// time) recorded by another process names the same process only when it was
// recorded in the same scope. It is "" when it cannot be read.
func Scope() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(boot))
	if id == "" || ns == "" {
		return ""
	}
	return id + "/" + ns
}

// StartTime returns the start time of pid in clock ticks after boot, or 0
// when it cannot be read.
func StartTime(pid int) uint64 {
	start, _, err := readStat(pid)
	if err != nil {
		return 0
	}
	return start
}

// errBadStat reports a /proc/<pid>/stat this parser does not understand.
var errBadStat = errors.New("malformed /proc stat")

// readStat parses /proc/<pid>/stat for the state (field 3) and the start time
// (field 22). The command name (field 2) may hold spaces and parentheses, so
// fields are counted from the last ')'.
func readStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
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

// Exited reports whether the process recorded as (pid, start), in this
// scope, has certainly exited: no such pid, a zombie (exited, not yet
// collected by its parent), or a pid now used by a process that started at
// another time (the pid was recycled). A start of 0 means it was not
// recorded; then only a missing pid counts.
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
	now, state, err := readStat(pid)
	if err != nil {
		// It may have exited between the two looks, or /proc hides it:
		// ask the kernel again rather than guess.
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	if state == 'Z' || state == 'X' {
		return true
	}
	return start != 0 && now != start
}
