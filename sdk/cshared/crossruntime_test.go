package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

// Each side takes the key crossRounds times and holds it crossHold, with a
// pause as long between rounds.
const (
	crossRounds = 25
	crossHold   = 3 * time.Millisecond
)

// TestCrossRuntime has a Go contender (this process, through the Go API)
// and a Python one (another process, through the C ABI) take the same key
// on the same backend: one SQLite file, one Redis key on a private server.
// Both log their critical sections with wall-clock times and fencing
// tokens; afterwards no two sections may overlap, and tokens must increase
// along time across both runtimes.
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

func contend(t *testing.T, cfg lock.Config) {
	configJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := "contended-" + randomHex(t)
	pyLog := filepath.Join(t.TempDir(), "python.log")
	cmd := python(t, "tests/contender.py", string(configJSON), key, strconv.Itoa(crossRounds), strconv.Itoa(int(crossHold/time.Millisecond)), pyLog)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	m, err := lock.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// Start together: the Python side is ready once it has loaded the
	// library and opened its manager.
	ready, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(ready) != "ready" {
		t.Fatalf("the Python contender did not get ready: %q, %v\n%s", ready, err, stderr.String())
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sections []section
	for range crossRounds {
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
		time.Sleep(crossHold) // give the other side its turn between rounds
	}
	err = cmd.Wait()
	exited = true
	if err != nil {
		t.Fatalf("the Python contender failed: %v\n%s", err, stderr.String())
	}
	sections = append(sections, readSections(t, pyLog)...)
	checkSections(t, sections)
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

// checkSections checks the merged log: every round of both sides is
// there, the two sides ran at the same time (so they did contend), no two
// sections overlap, and tokens increase along time.
func checkSections(t *testing.T, sections []section) {
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
	if count["go"] != crossRounds || count["python"] != crossRounds {
		t.Errorf("sections: %v, want %d each", count, crossRounds)
	}
	if first["go"] > last["python"] || first["python"] > last["go"] {
		t.Errorf("the two runtimes did not run at the same time: go [%d, %d], python [%d, %d]", first["go"], last["go"], first["python"], last["python"])
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

// startRedis starts a private redis-server on a free loopback port, keeping
// nothing on disk, stopped at cleanup, and returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found on PATH; this test starts a private server and never skips: install it (apt-get install redis-server)")
	}
	dir := t.TempDir()
	var lastErr error
	for range 5 { // a port found free can be taken before the server binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		if lastErr = waitPing(addr, exited); lastErr == nil {
			t.Cleanup(stop)
			return addr
		}
		stop()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	t.Fatalf("starting redis-server: %v\n%s", lastErr, log)
	return ""
}

// waitPing waits until the server at addr answers PING, it exits, or a
// deadline passes.
func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(time.Second))
			reply := make([]byte, 7)
			_, err = io.WriteString(conn, "PING\r\n")
			if err == nil {
				_, err = io.ReadFull(conn, reply)
			}
			conn.Close()
			if err == nil && string(reply) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited", addr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer PING: %v", addr, err)
		}
	}
}
