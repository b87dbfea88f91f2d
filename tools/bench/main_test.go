package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// shared is the private server of the tests and benchmarks that need one,
// started by the first of them and stopped by TestMain.
var shared struct {
	once sync.Once
	s    *server
	err  error
}

// sharedServer returns the package's private redis-server, failing tb when
// it cannot start (redis-server missing: the test says what to install and
// never skips).
func sharedServer(tb testing.TB) *server {
	tb.Helper()
	shared.once.Do(func() { shared.s, shared.err = startServer("") })
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.s
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.s != nil {
		shared.s.stop()
	}
	os.Exit(code)
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-workers", "2, 8", "-duration", "1s"}, io.Discard)
	if err != nil || len(o.workers) != 2 || o.workers[0] != 2 || o.workers[1] != 8 || o.duration != time.Second {
		t.Fatalf("parseFlags = %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"-workers", "2,x"},
		{"-workers", "0"},
		{"-duration", "0s"},
		{"extra"},
		{"-no-such-flag"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted them", args)
		}
	}
}

func TestMissingRedisServerIsAClearError(t *testing.T) {
	_, err := startServer(t.TempDir() + "/no-redis-server")
	if !errors.Is(err, redistest.ErrNoServer) || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("startServer with a missing binary = %v; want redistest.ErrNoServer naming the package", err)
	}
}

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_publish:calls=12,usec=34,usec_per_call=2.83,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=100,usec=500,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_subscribe:calls=3,usec=4,usec_per_call=1.33,rejected_calls=0,failed_calls=0\r\n"
	stats := parseCommandStats(info)
	if stats["publish"] != 12 || stats["evalsha"] != 100 || stats["subscribe"] != 3 {
		t.Fatalf("parseCommandStats = %v", stats)
	}
	before := commandStats{"publish": 2, "subscribe": 1}
	if got := pubsubCalls(before, stats); got != 12 {
		t.Fatalf("pubsubCalls = %d; want 10 publishes + 2 subscribes", got)
	}
}

// TestRunAgainstAPrivateServer runs the whole command, briefly, against a
// private redis-server: every library's row must come out, without errors,
// and the queue-based lock must keep its critical sections apart.
func TestRunAgainstAPrivateServer(t *testing.T) {
	s := sharedServer(t) // fails with the install hint if redis-server is missing
	o, err := parseFlags([]string{
		"-duration", "250ms", "-warmup", "50ms", "-workers", "2",
		"-rounds", "2", "-slice", "10ms",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	if err := run(t.Context(), o, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	report := out.String()
	if strings.Contains(report, "error:") {
		t.Fatalf("a library failed:\n%s", report)
	}
	for _, c := range cyclers(s, "test:") {
		if !strings.Contains(report, "| "+c.name+" |") {
			t.Errorf("no uncontended row for %q", c.name)
		}
		c.close()
	}
	for _, c := range contenders(time.Millisecond, 5*time.Millisecond, 2*time.Millisecond) {
		if !strings.Contains(report, "| "+c.name+" | 2 |") {
			t.Errorf("no contention row for %q", c.name)
		}
	}
	for line := range strings.Lines(report) {
		if strings.HasPrefix(line, "| zerotal lock: Make(key).Block |") && !strings.Contains(line, "| 0 / 0 |") {
			t.Errorf("zerotal's critical sections overlapped: %s", line)
		}
	}
}
