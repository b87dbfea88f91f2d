package file

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Child processes: the test binary re-executed with childModeEnv set, so
// that locks are contended by, and held by, real other processes.
const (
	childModeEnv = "FILELOCK_TEST_CHILD"
	childDirEnv  = "FILELOCK_TEST_DIR"
	childKeyEnv  = "FILELOCK_TEST_KEY"
	childArgsEnv = "FILELOCK_TEST_ARGS" // mode-specific: see runChild
)

// runChild is the child's main; it returns the exit status.
func runChild(mode string) int {
	d, err := Open(os.Getenv(childDirEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer func() { _ = d.Close() }()
	key := os.Getenv(childKeyEnv)
	switch mode {
	case "hold":
		// Take key for a minute, say so, and wait to be killed.
		ok, err := d.Acquire(context.Background(), key, newOwner(), time.Minute)
		if err != nil || !ok {
			fmt.Fprintln(os.Stderr, "acquire:", ok, err)
			return 2
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "stress":
		// Wait for "go" so that every worker starts together, then run
		// the stress worker and report its holds.
		var cfg stressConfig
		if _, err := fmt.Sscan(os.Getenv(childArgsEnv), &cfg.iterations, &cfg.ttl, &cfg.overstayEvery); err != nil {
			fmt.Fprintln(os.Stderr, "args:", err)
			return 2
		}
		cfg.key, cfg.marker = key, os.Getenv(childDirEnv)+"/critical-section"
		fmt.Println("ready")
		if line, _ := bufio.NewReader(os.Stdin).ReadString('\n'); line != "go\n" {
			return 2
		}
		res, err := stressWorker(context.Background(), d, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stress:", err)
			return 2
		}
		fmt.Println("overlaps", res.overlaps)
		for _, h := range res.holds {
			fmt.Println("hold", h.start, h.end, h.released)
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// child is a running child process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// startChild starts the test binary as a child in mode on dir and key.
func startChild(t *testing.T, mode, dir, key, args string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childDirEnv+"="+dir, childKeyEnv+"="+key, childArgsEnv+"="+args)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return c
}

// expect reads the child's next line and fails the test unless it is want.
func (c *child) expect(t *testing.T, want string) {
	t.Helper()
	line, err := c.stdout.ReadString('\n')
	if strings.TrimSuffix(line, "\n") != want {
		t.Fatalf("child %d said %q (%v); want %q", c.cmd.Process.Pid, line, err, want)
	}
}

// parseStress reads a stress child's report until it exits.
func (c *child) parseStress(t *testing.T) stressResult {
	t.Helper()
	var res stressResult
	for {
		line, err := c.stdout.ReadString('\n')
		if f := strings.Fields(line); len(f) > 0 {
			switch {
			case f[0] == "overlaps" && len(f) == 2:
				res.overlaps, _ = strconv.Atoi(f[1])
			case f[0] == "hold" && len(f) == 4:
				var h hold
				h.start, _ = strconv.ParseInt(f[1], 10, 64)
				h.end, _ = strconv.ParseInt(f[2], 10, 64)
				h.released = f[3] == "true"
				res.holds = append(res.holds, h)
			default:
				t.Fatalf("stress child said %q", line)
			}
		}
		if err != nil {
			break
		}
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("stress child: %v", err)
	}
	return res
}
