package sqlite

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/core/driver"
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
