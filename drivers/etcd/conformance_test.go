package etcd

import (
	"testing"
	"time"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

// expirySlack is how much later than its TTL the kit lets a key go. etcd
// leases are whole seconds, at least the server's minimum (1s on the test
// cluster, whose election timeout is 500ms), and the leader looks for
// expired leases every 500ms, then deletes their keys through the log: a
// 1ms lock is held for 1s to 1.5s and a bit. The slack is that, plus room
// for a loaded machine. It only ever makes locks last longer than the TTL
// the engine counts with, never shorter.
const expirySlack = 2500 * time.Millisecond

func TestConformance(t *testing.T) {
	c := etcdtest.Start(t)
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			return openDriver(t, c.URL())
		},
		ChildEnv: func(testing.TB) []string {
			return []string{childURLEnv + "=" + c.URL()}
		},
		ExpirySlack: expirySlack,
	})
}
