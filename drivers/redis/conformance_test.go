package redis

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// childURLEnv carries the private server's URL to the crash test's child
// process, so that the child holds its lock on the same server.
const childURLEnv = "ZEROTAL_REDIS_TEST_URL"

func TestMain(m *testing.M) {
	if os.Getenv(waitChildURLEnv) != "" {
		runWaitChild()
	}
	conformance.Child(func() (driver.Driver, error) {
		url := os.Getenv(childURLEnv)
		if url == "" {
			// Open("") would fall back to $REDIS_URL, which may be a
			// shared server: the child must only touch the private one.
			return nil, os.ErrNotExist
		}
		return Open(url)
	})
	// After PoolSize dials in a row fail, go-redis starts a probe that
	// dials once a second until one works; it checks for Close only before
	// each dial, so it may outlive a closed client by up to a second. It is
	// go-redis's own, and ends by itself.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

func TestConformance(t *testing.T) {
	s := startServer(t)
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			return s.open(t)
		},
		ChildEnv: func(testing.TB) []string {
			return []string{childURLEnv + "=" + s.url()}
		},
	})
}
