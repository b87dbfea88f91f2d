package etcdtest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSingleMemberServes(t *testing.T) {
	c := Start(t)
	cli := c.Client(t)
	ctx := t.Context()
	if _, err := cli.Put(ctx, "etcdtest/k", "v"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	resp, err := cli.Get(ctx, "etcdtest/k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("Get = %v, %v; want the value put", resp, err)
	}
	for _, ep := range c.Endpoints() {
		if strings.HasSuffix(ep, ":2379") || strings.HasSuffix(ep, ":2380") {
			t.Fatalf("endpoint %s is on etcd's default port", ep)
		}
	}
}

func TestClusterFailsOverAndRestarts(t *testing.T) {
	c := StartCluster(t, 3)
	cli := c.Client(t)
	leader := c.WaitLeader(t, 10*time.Second)
	leader.Kill()
	if leader.Running() {
		t.Fatal("a killed member still runs")
	}
	next := c.WaitLeader(t, 10*time.Second)
	if next == leader {
		t.Fatalf("the killed member %s is still the leader", leader.Name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "etcdtest/after-failover", "v"); err != nil {
		t.Fatalf("Put after the leader was killed: %v", err)
	}
	leader.Restart(t)
	c.WaitLeader(t, 10*time.Second)
	rctx, rcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer rcancel()
	resp, err := cli.Get(rctx, "etcdtest/after-failover")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get after the restart = %v, %v", resp, err)
	}
}

func TestTLSCluster(t *testing.T) {
	c := Start(t, WithTLS())
	if !strings.HasPrefix(c.URL(), "etcds://") || c.CAFile() == "" {
		t.Fatalf("URL %q, CA file %q; want etcds:// and a CA file", c.URL(), c.CAFile())
	}
	if _, err := c.Client(t).Put(t.Context(), "etcdtest/tls", "v"); err != nil {
		t.Fatalf("Put over TLS: %v", err)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the goroutine, so that a test can read what Binary says when it fails.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingBinaryFailsWithWhatToInstall(t *testing.T) {
	t.Setenv(BinaryEnv, "/nonexistent/etcd")
	_, err := findBinary()
	if err == nil || !strings.Contains(err.Error(), BinaryEnv) {
		t.Fatalf("findBinary with a missing $%s = %v; want an error naming it", BinaryEnv, err)
	}
	// Binary itself fails the test, never skips it.
	saved := build
	build = new(buildState)
	defer func() { build = saved }()
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Binary(rec)
		rec.msg = "Binary returned"
	}()
	<-done
	if !strings.Contains(rec.msg, "never skip") || !strings.Contains(rec.msg, BinaryEnv) {
		t.Fatalf("Binary with a missing server said %q; want a failure that says what to set", rec.msg)
	}
}
