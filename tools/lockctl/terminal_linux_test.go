package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal: lockctl gets the terminal end, the test reads
// and types on the other.
type pty struct {
	master, tty *os.File

	mu     sync.Mutex
	output bytes.Buffer
	more   chan struct{} // closed and replaced when output grows
	closed chan struct{} // closed when every terminal end is closed
}

func openPTY(t *testing.T) *pty {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the terminal end: %v", err)
	}
	p := &pty{master: master, tty: tty, more: make(chan struct{}), closed: make(chan struct{})}
	go func() {
		defer close(p.closed)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.output.Write(buf[:n])
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
			if err != nil {
				return // EIO once every terminal end is closed
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		master.Close()
		<-p.closed
	})
	return p
}

// waitUntil waits until what the terminal has shown satisfies cond, and
// returns it.
func (p *pty) waitUntil(t *testing.T, what string, cond func(shown string) bool) string {
	t.Helper()
	deadline := time.After(patience)
	for {
		p.mu.Lock()
		out, more := p.output.String(), p.more
		p.mu.Unlock()
		if cond(out) {
			return out
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("the terminal did not show %s within %v; it showed %q", what, patience, out)
		}
	}
}

// final waits until every terminal end is closed and returns all the
// terminal showed.
func (p *pty) final(t *testing.T) string {
	t.Helper()
	select {
	case <-p.closed:
	case <-time.After(patience):
		t.Fatalf("the terminal was not closed within %v", patience)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// waitedRE matches the time waited on each redraw of the waiting line.
var waitedRE = regexp.MustCompile(`\rlockctl: waiting (\d+\.\d)s for "k"`)

func TestWaitLineOnATerminal(t *testing.T) {
	h := newHarness(t)
	holder, _, release := h.startHolder("k")
	term := openPTY(t)
	waiter := h.startWith(startOptions{stderr: term.tty}, "run", "--key", "k", "--wait", "5m", "--", "echo", "my turn")
	term.tty.Close() // lockctl has its copy; the reader sees EIO when it exits

	want := fmt.Sprintf(`": held by pid %d on `, holder.cmd.Process.Pid)
	term.waitUntil(t, "the holder", func(shown string) bool { return strings.Contains(shown, want) })
	// The line is redrawn, and the time waited goes up.
	shown := term.waitUntil(t, "three redraws", func(shown string) bool { return len(waitedRE.FindAllString(shown, -1)) >= 3 })
	var waited []float64
	for _, m := range waitedRE.FindAllStringSubmatch(shown, -1) {
		f, _ := strconv.ParseFloat(m[1], 64)
		waited = append(waited, f)
	}
	if !slices.IsSorted(waited) || waited[0] == waited[len(waited)-1] {
		t.Errorf("times waited %v, want them rising", waited)
	}
	if strings.Contains(shown, "\n") {
		t.Errorf("the waiting line is not rewritten in place: %q", shown)
	}

	release()
	if code := waiter.wait(t); code != 0 {
		t.Fatalf("waiter exited %d", code)
	}
	if got := waiter.stdout.text(); got != "my turn\n" {
		t.Errorf("command printed %q", got)
	}
	// The line is erased (blanked, cursor back at its start) before the
	// command runs, so its output starts on a clean line.
	shown = term.final(t)
	last := shown[strings.LastIndex(shown[:len(shown)-1], "\r"):]
	if len(last) < 10 || strings.Trim(last, " \r") != "" || !strings.HasSuffix(last, "\r") {
		t.Errorf("terminal ends with %q, want the line blanked", last)
	}
}

// ^C on a terminal signals the whole foreground process group, lockctl and
// its command alike. lockctl must not forward it as well: the command gets
// it once. SIGTERM, which no key sends, is forwarded.
func TestCtrlCOnATerminalReachesTheCommandOnce(t *testing.T) {
	h := newHarness(t)
	term := openPTY(t)
	marker := h.path("signals")
	cmd := h.script("count.sh", `trap 'echo INT >> "$M"' INT
trap 'echo TERM >> "$M"; kill $pid; exit 42' TERM
sleep 1000 & pid=$!
echo ready
while kill -0 $pid 2>/dev/null; do wait $pid; done
`)
	// lockctl leads a new session whose controlling terminal is the pty, so
	// it and its command form the terminal's foreground process group, as
	// when a user starts it at a shell prompt.
	p := h.startWith(startOptions{
		env:    []string{"M=" + marker},
		stderr: term.tty,
		attr:   &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2},
	}, "run", "--key", "k", "--", cmd)
	term.tty.Close()
	p.stdout.waitFor(t, "ready")

	if _, err := term.master.Write([]byte{3}); err != nil { // ^C
		t.Fatal(err)
	}
	waitUntil(t, "the command records SIGINT", func() bool {
		b, _ := os.ReadFile(marker)
		return len(b) > 0
	})
	// Had lockctl forwarded the SIGINT, it would have done so before it
	// forwards this SIGTERM, and the command would have recorded it first.
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 42 {
		t.Fatalf("exit %d, want the command's 42", code)
	}
	if got := readFile(t, marker); got != "INT\nTERM\n" {
		t.Errorf("the command got\n%swant one SIGINT, then SIGTERM", got)
	}
}
