package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
	lock "github.com/zerotal/lock/sdk/go"
)

// Each side takes the key crossRounds times and holds it crossHold, with a
// pause as long between rounds.
const (
	crossRounds = 25
	crossHold   = 3 * time.Millisecond
)

// TestCrossRuntime has three runtimes take the same key on the same
// backend: Go (this process, through the Go API), Python and Node.js
// (other processes, through the C ABI), on one SQLite file, then on one
// Redis key on a private server. Each logs its critical sections with
// wall-clock times and fencing tokens; afterwards no two sections may
// overlap, and tokens must increase along time across the runtimes.
func TestCrossRuntime(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		cfg := lock.Config{Driver: "sqlite", Prefix: "xrt:", SQLite: lock.SQLiteConfig{Path: filepath.Join(t.TempDir(), "locks.db")}}
		contend(t, cfg)
	})
	t.Run("redis", func(t *testing.T) {
		addr := startRedis(t)
		cfg := lock.Config{Driver: "redis", Prefix: "xrt-" + randomHex(t) + ":", Redis: lock.RedisConfig{URL: "redis://" + addr + "/0"}}
		contend(t, cfg)
	})
}

// section is one critical section, as a contender logged it.
type section struct {
	start, end int64 // wall clock, ns
	token      uint64
	who        string
}

// contender is another runtime's process taking the key: it prints
// "ready", starts on a line on stdin, prints "first" after its first round
// and goes on at the next line, and writes its sections to log.
type contender struct {
	who    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *strings.Builder
	log    string
}

func startContender(t *testing.T, who string, cmd *exec.Cmd, log string) *contender {
	t.Helper()
	c := &contender{who: who, cmd: cmd, log: log, stderr: &strings.Builder{}}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdout = bufio.NewReader(out)
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

func contend(t *testing.T, cfg lock.Config) {
	configJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := "contended-" + randomHex(t)
	args := []string{string(configJSON), key, strconv.Itoa(crossRounds), strconv.Itoa(int(crossHold / time.Millisecond))}
	pyLog, nodeLog := filepath.Join(t.TempDir(), "python.log"), filepath.Join(t.TempDir(), "node.log")
	others := []*contender{
		startContender(t, "python", python(t, append([]string{"tests/contender.py"}, append(args, pyLog)...)...), pyLog),
		startContender(t, "node", node(t, append([]string{"test/contender.js"}, append(args, nodeLog)...)...), nodeLog),
	}
	m, err := lock.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// Start together: the others are ready once they have loaded the
	// library and opened their managers.
	for _, c := range others {
		expectLine(t, c, "ready")
	}
	for _, c := range others {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sections []section
	for i := range crossRounds {
		err := m.Block(ctx, key, 10*time.Second, func(ctx context.Context) error {
			l, _ := lock.FromContext(ctx)
			start := time.Now().UnixNano()
			time.Sleep(crossHold) // the work
			end := time.Now().UnixNano()
			if ctx.Err() != nil {
				return fmt.Errorf("lost the lock inside the critical section: %w", context.Cause(ctx))
			}
			sections = append(sections, section{start, end, l.Token(), "go"})
			return nil
		}, lock.WithTimeout(time.Minute), lock.WithRetryDelay(2*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Every runtime has its first round before any has its
			// second: none can finish before another has begun.
			for _, c := range others {
				expectLine(t, c, "first")
			}
			for _, c := range others {
				if _, err := io.WriteString(c.stdin, "continue\n"); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(crossHold) // give the others their turn between rounds
	}
	for _, c := range others {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("the %s contender failed: %v\n%s", c.who, err, c.stderr.String())
		}
		sections = append(sections, readSections(t, c.log)...)
	}
	checkSections(t, sections, "go", "python", "node")
}

// expectLine reads the contender's next line and fails the test unless it
// is want.
func expectLine(t *testing.T, c *contender, want string) {
	t.Helper()
	line, err := c.stdout.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != want {
		t.Fatalf("the %s contender did not say %q: %q, %v\n%s", c.who, want, line, err, c.stderr.String())
	}
}

func readSections(t *testing.T, path string) []section {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []section
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var s section
		if _, err := fmt.Sscanf(line, "%d %d %d %s", &s.start, &s.end, &s.token, &s.who); err != nil {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

// checkSections checks the merged log: every round of every runtime is
// there, each ran while another did (so they did contend), no two
// sections overlap, and tokens increase along time.
func checkSections(t *testing.T, sections []section, runtimes ...string) {
	t.Helper()
	sort.Slice(sections, func(i, j int) bool { return sections[i].start < sections[j].start })
	count := map[string]int{}
	first, last := map[string]int64{}, map[string]int64{}
	switches := 0
	for i, s := range sections {
		count[s.who]++
		if _, ok := first[s.who]; !ok {
			first[s.who] = s.start
		}
		last[s.who] = s.end
		if i == 0 {
			continue
		}
		prev := sections[i-1]
		if s.start < prev.end {
			t.Errorf("critical sections overlap: %s [%d, %d] token %d and %s [%d, %d] token %d",
				prev.who, prev.start, prev.end, prev.token, s.who, s.start, s.end, s.token)
		}
		if s.token <= prev.token {
			t.Errorf("fencing token went from %d (%s) to %d (%s)", prev.token, prev.who, s.token, s.who)
		}
		if s.who != prev.who {
			switches++
		}
	}
	for _, a := range runtimes {
		if count[a] != crossRounds {
			t.Errorf("sections: %v, want %d of each of %v", count, crossRounds, runtimes)
		}
		for _, b := range runtimes {
			if a != b && (first[a] > last[b] || first[b] > last[a]) {
				t.Errorf("%s and %s did not run at the same time: %s [%d, %d], %s [%d, %d]", a, b, a, first[a], last[a], b, first[b], last[b])
			}
		}
	}
	t.Logf("%d sections, the key changed runtime %d times, tokens %d..%d", len(sections), switches, sections[0].token, sections[len(sections)-1].token)
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startRedis starts a private redis-server on a free loopback port (the
// driver's launcher), stopped at cleanup, and returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	return redistest.StartT(t).Addr()
}
