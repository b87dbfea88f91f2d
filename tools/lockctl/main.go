// Command lockctl runs a command under a lock, and shows and frees locks,
// with the drivers of the zerotal lock SDK: by default a SQLite file in the
// user's state directory, so that separate invocations on one host exclude
// each other with no setup; Redis across hosts; or a lock directory.
//
//	lockctl run --key nightly-backup -- ./backup.sh
//	lockctl status nightly-backup
//
// Run `lockctl help` for the commands, and docs/lockctl.md for the manual.
package main

import (
	"fmt"
	"os"
	"runtime"
)

// env is what a command needs from the process, so that tests can give
// their own environment.
type env struct {
	stdout, stderr *os.File
	getenv         func(string) string
}

// commands maps each command name to its implementation. A command returns
// nil for success or an error carrying its exit status (see exit.go).
var commands = map[string]func(e *env, args []string) error{
	"run":     runCommand,
	"status":  statusCommand,
	"release": releaseCommand,
	"version": versionCommand,
}

const mainHelp = `lockctl runs a command under a lock, and shows and frees locks.

Usage:
  lockctl run [flags] -- COMMAND [ARGS...]   run COMMAND while holding a lock
  lockctl status [--json] KEY...             show who holds KEY
  lockctl release --force KEY...             free KEY, whoever holds it
  lockctl version                            print lockctl's version
  lockctl help COMMAND                       show a command's help (or: COMMAND --help)

Locks live in a SQLite file in your state directory unless --driver, or
LOCK_DRIVER, names another backend: file (a lock directory) or redis (across
hosts).

Examples:
  # Two terminals, one key: the second waits up to a minute for the first.
  lockctl run --key demo -- sleep 10
  lockctl run --key demo --wait 1m -- echo "my turn"

  # A cron job that skips a run while the previous one still works.
  lockctl run --key nightly-backup --ttl 2m -- /usr/local/bin/backup

See https://github.com/zerotal/lock/blob/main/docs/lockctl.md for the manual.
`

func main() {
	// lockctl only waits: for the backend, for its command, for signals.
	// More than one P adds nothing to that but idle threads that spin
	// looking for work, on the CPUs the command, and at a hand-off the next
	// holder, need. On a 2-CPU machine one P halved the slow tail of the
	// hand-off between two lockctls (p90 5.8-7.6 ms against 6.6-16.7 ms;
	// docs/benchmarks.md, "One P"). A GOMAXPROCS the user set wins.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
	os.Exit(lockctl(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}))
}

// lockctl runs the command args name and returns the exit status.
func lockctl(args []string, e *env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, mainHelp)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case guardRole:
		return runGuard(rest)
	case leaderRole:
		return runLeader()
	case "-h", "-help", "--help":
		fmt.Fprint(e.stdout, mainHelp)
		return exitOK
	case "-version", "--version":
		name = "version"
	case "help":
		if len(rest) == 0 {
			fmt.Fprint(e.stdout, mainHelp)
			return exitOK
		}
		name, rest = rest[0], []string{"--help"}
	}
	cmd, ok := commands[name]
	if !ok {
		return exitCode(e.stderr, fail(exitUsage, "unknown command %q: want run, status, release or version (see 'lockctl --help')", name))
	}
	return exitCode(e.stderr, cmd(e, rest))
}
