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
// Redis key on a private server. Each appends "enter" and "leave" lines
// with its fencing token to one log file (O_APPEND) as the first and last
// acts of its critical sections, so the file is the order in which the key
// was held, with no clocks of three runtimes to compare: no section may
// begin inside another, and tokens must increase along the file.
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

// contender is another runtime's process taking the key: it prints
// "ready", starts on a line on stdin, prints "first" after its first round
// and goes on at the next line.
type contender struct {
	who    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *strings.Builder
}

func startContender(t *testing.T, who string, cmd *exec.Cmd) *contender {
	t.Helper()
	c := &contender{who: who, cmd: cmd, stderr: &strings.Builder{}}
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
	logPath := filepath.Join(t.TempDir(), "sections.log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	args := []string{string(configJSON), key, strconv.Itoa(crossRounds), strconv.Itoa(int(crossHold / time.Millisecond)), logPath}
	others := []*contender{
		startContender(t, "python", python(t, append([]string{"tests/contender.py"}, args...)...)),
		startContender(t, "node", node(t, append([]string{"test/contender.js"}, args...)...)),
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
	for i := range crossRounds {
		err := m.Block(ctx, key, 10*time.Second, func(ctx context.Context) error {
			l, _ := lock.FromContext(ctx)
			if _, err := fmt.Fprintf(log, "enter go %d\n", l.Token()); err != nil {
				return err
			}
			time.Sleep(crossHold) // the work
			if ctx.Err() != nil {
				return fmt.Errorf("lost the lock inside the critical section: %w", context.Cause(ctx))
			}
			_, err := fmt.Fprintf(log, "leave go %d\n", l.Token())
			return err
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
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	problems, summary := checkSections(string(data), crossRounds, "go", "python", "node")
	for _, p := range problems {
		t.Error(p)
	}
	t.Log(summary)
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

// checkSections checks the shared log, in the order its lines were
// written: each "enter" is followed by the same holder's "leave" before
// anyone else enters, tokens increase from section to section, each
// runtime has rounds sections, and each runtime held the key both before
// and after each other one (so they did contend). It returns what is
// wrong, and a summary.
func checkSections(log string, rounds int, runtimes ...string) (problems []string, summary string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	count := map[string]int{}
	first, last := map[string]int{}, map[string]int{}
	var inside string // "who token" of the section open at this line, if any
	var prevToken uint64
	sections, switches, prevWho := 0, 0, ""
	for i, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var what, who string
		var token uint64
		if _, err := fmt.Sscanf(line, "%s %s %d", &what, &who, &token); err != nil {
			fail("log line %d: bad line %q: %v", i+1, line, err)
			continue
		}
		holder := fmt.Sprintf("%s %d", who, token)
		switch what {
		case "enter":
			if inside != "" {
				fail("log line %d: %s entered while %s held the key", i+1, holder, inside)
			}
			if token <= prevToken {
				fail("log line %d: the fencing token went from %d to %d (%s)", i+1, prevToken, token, who)
			}
			inside, prevToken = holder, token
			count[who]++
			if _, ok := first[who]; !ok {
				first[who] = sections
			}
			last[who] = sections
			if prevWho != "" && who != prevWho {
				switches++
			}
			prevWho = who
			sections++
		case "leave":
			if inside != holder {
				fail("log line %d: %s left, but the key was held by %q", i+1, holder, inside)
			}
			inside = ""
		default:
			fail("log line %d: bad line %q", i+1, line)
		}
	}
	if inside != "" {
		fail("%s never left", inside)
	}
	for _, a := range runtimes {
		if count[a] != rounds {
			fail("sections: %v, want %d of each of %v", count, rounds, runtimes)
		}
		for _, b := range runtimes {
			if a != b && (first[a] > last[b] || first[b] > last[a]) {
				fail("%s and %s did not contend: %s held the key in sections %d..%d, %s in %d..%d", a, b, a, first[a], last[a], b, first[b], last[b])
			}
		}
	}
	return problems, fmt.Sprintf("%d sections, the key changed runtime %d times, tokens up to %d", sections, switches, prevToken)
}

func TestCheckSectionsFindsWhatIsWrong(t *testing.T) {
	good := "enter a 1\nleave a 1\nenter b 2\nleave b 2\nenter a 3\nleave a 3\nenter b 4\nleave b 4\n"
	if problems, _ := checkSections(good, 2, "a", "b"); len(problems) != 0 {
		t.Fatalf("a good log: %v", problems)
	}
	for name, log := range map[string]string{
		"overlap":       "enter a 1\nenter b 2\nleave a 1\nleave b 2\nenter a 3\nleave a 3\nenter b 4\nleave b 4\n",
		"token back":    "enter a 1\nleave a 1\nenter b 5\nleave b 5\nenter a 3\nleave a 3\nenter b 6\nleave b 6\n",
		"no contention": "enter a 1\nleave a 1\nenter a 2\nleave a 2\nenter b 3\nleave b 3\nenter b 4\nleave b 4\n",
		"never left":    "enter a 1\nleave a 1\nenter b 2\nleave b 2\nenter a 3\nleave a 3\nenter b 4\n",
		"a round short": "enter a 1\nleave a 1\nenter b 2\nleave b 2\nenter b 4\nleave b 4\n",
	} {
		if problems, _ := checkSections(log, 2, "a", "b"); len(problems) == 0 {
			t.Errorf("%s: no problem found in\n%s", name, log)
		}
	}
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
