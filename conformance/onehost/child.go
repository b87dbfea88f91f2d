package onehost

import (
	"fmt"
	"os"

	"github.com/zerotal/lock/driver"
)

// Suite says how to reach one driver's store.
type Suite struct {
	// Open opens the driver on store, in the test and in its children.
	Open func(store string) (driver.Driver, error)
	// Store is the path of a fresh store inside the empty directory dir
	// (a database file, a lock directory).
	Store func(dir string) string
	// Rooms is the directory that holds store's wait rooms.
	Rooms func(store string) string
}

// The environment that tells a child what to do.
const (
	envRole  = "ZEROTAL_ONEHOST_ROLE"
	envStore = "ZEROTAL_ONEHOST_STORE"
	envKey   = "ZEROTAL_ONEHOST_KEY"
	envMark  = "ZEROTAL_ONEHOST_MARK" // a flock file (pingpong) or the marker (fair)
)

// Child must be called first thing in TestMain. In a child process started
// by the Suite it runs the child's part and exits; otherwise it returns at
// once.
func Child(s Suite) {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	run, ok := roles[role]
	if !ok {
		fmt.Fprintln(os.Stderr, "onehost: unknown child role", role)
		os.Exit(2)
	}
	d, err := s.Open(os.Getenv(envStore))
	if err == nil {
		err = run(d)
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "onehost child %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}
