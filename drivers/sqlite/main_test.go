package sqlite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/conformance/onehost"
	"github.com/zerotal/lock/driver"
	"go.uber.org/goleak"
)

// childRoleEnv names the part a re-executed test binary plays; the other
// childXxxEnv variables carry its arguments.
const (
	childRoleEnv  = "ZEROTAL_SQLITE_CHILD"
	childDBEnv    = "ZEROTAL_SQLITE_DB"
	childKeyEnv   = "ZEROTAL_SQLITE_KEY"
	childCountEnv = "ZEROTAL_SQLITE_COUNT"
	childLogEnv   = "ZEROTAL_SQLITE_LOG"
	childMarkEnv  = "ZEROTAL_SQLITE_MARK"
	// conformanceDBEnv carries the database path to the conformance kit's
	// crash child.
	conformanceDBEnv = "ZEROTAL_SQLITE_CONFORMANCE_DB"
)

func TestMain(m *testing.M) {
	conformance.Child(func() (driver.Driver, error) { return Open(os.Getenv(conformanceDBEnv)) })
	onehost.Child(oneHost)
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}

// runChild plays role in a re-executed test binary and returns its exit code.
func runChild(role string) int {
	var err error
	switch role {
	case "hold":
		err = holdUntilKilled()
	case "hammer":
		err = hammer()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", role, os.Getpid(), err)
		return 1
	}
	return 0
}

// childCommand re-executes the test binary in role with env added.
func childCommand(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childRoleEnv + "=" + role}, env...)...)
	return cmd
}

// holdUntilKilled is the "hold" child: it takes a key for an hour, reports
// its token on stdout and waits until it is killed (or stdin closes).
func holdUntilKilled() error {
	d, err := Open(os.Getenv(childDBEnv))
	if err != nil {
		return err
	}
	defer d.Close()
	owner := fmt.Sprintf("%032x", os.Getpid())
	token, ok, err := d.AcquireFenced(context.Background(), os.Getenv(childKeyEnv), owner, time.Hour)
	if err != nil || !ok {
		return fmt.Errorf("acquire = %v, %v", ok, err)
	}
	fmt.Printf("acquired %d\n", token)
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// oneHost reaches a database file for the cross-process waiting checks.
var oneHost = onehost.Suite{
	Open:  func(path string) (driver.Driver, error) { return Open(path) },
	Store: func(dir string) string { return filepath.Join(dir, "locks.db") },
	Rooms: waitsDir,
}
