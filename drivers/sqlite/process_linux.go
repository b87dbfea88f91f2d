package sqlite

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// pidScope identifies the boot and pid namespace of this process: a pid and a
// start time mean the same process only to callers that share both.
func pidScope() string {
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

// processStart returns the start time of pid in clock ticks since boot, or 0
// when it cannot be read.
func processStart(pid int) int64 {
	start, _, err := readStat(pid)
	if err != nil {
		return 0
	}
	return start
}

// readStat parses /proc/<pid>/stat for the start time (field 22) and the
// state (field 3). The command name (field 2) may contain spaces and
// parentheses, so fields are counted from the last ')'.
func readStat(pid int) (start int64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed stat")
	}
	fields := strings.Fields(string(b[i+1:]))
	const stateField, startField = 3, 22
	if len(fields) <= startField-stateField {
		return 0, 0, errors.New("short stat")
	}
	start, err = strconv.ParseInt(fields[startField-stateField], 10, 64)
	if err != nil || start <= 0 || len(fields[0]) != 1 {
		return 0, 0, errors.New("malformed stat")
	}
	return start, fields[0][0], nil
}

// holderGone reports whether the process recorded as (pid, start) has
// certainly exited. Anything uncertain (no start time recorded, a process
// hidden from us) counts as alive: a wrong "alive" only delays a waiter until
// the TTL, a wrong "gone" would break mutual exclusion.
func holderGone(pid, start int64) bool {
	if pid <= 0 || pid > math.MaxInt32 || start <= 0 {
		return false
	}
	p := int(pid)
	if err := syscall.Kill(p, 0); errors.Is(err, syscall.ESRCH) {
		return true
	} else if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	now, state, err := readStat(p)
	if err != nil {
		// The process may have exited between the two looks, or /proc may
		// hide it (hidepid): ask the kernel again rather than guess.
		return errors.Is(syscall.Kill(p, 0), syscall.ESRCH)
	}
	// A zombie has exited; only its parent has not collected it yet.
	return now != start || state == 'Z' || state == 'X'
}
