//go:build unix

package onehost

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
	lock "github.com/zerotal/lock/sdk/go"
)

const (
	// handoffHold is how long a holder keeps the key after its waiter said
	// it is about to wait, in the benchmark: ample time to be queued. A
	// waiter that queued late would only make the hand-off look slower.
	handoffHold = 2 * time.Millisecond
	// fairWaiters and fairRun shape the fairness test.
	fairWaiters = 8
	fairRun     = 3 * time.Second // long enough that a loaded scheduler's favourites even out
	fairHold    = 2 * time.Millisecond
	// promptly bounds what must happen at once (a loaded machine included).
	promptly = 10 * time.Second
)

// roles are the parts a child plays.
var roles = map[string]func(driver.Driver) error{"pingpong": pingpong, "fair": fair, "queue": queueChild}

// open opens the driver on store for the test, closed at cleanup.
func (s Suite) open(t testing.TB, store string) driver.Driver {
	t.Helper()
	d, err := s.Open(store)
	if err != nil {
		t.Fatalf("open %s: %v", store, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// prepare creates the store before children race to.
func (s Suite) prepare(t testing.TB, store string) {
	t.Helper()
	d, err := s.Open(store)
	if err != nil {
		t.Fatalf("open %s: %v", store, err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("close %s: %v", store, err)
	}
}

func waiter(t testing.TB, d driver.Driver) driver.Waiter {
	t.Helper()
	w, ok := d.(driver.Waiter)
	if !ok {
		t.Fatalf("%T is not a driver.Waiter", d)
	}
	return w
}

func inspector(t testing.TB, d driver.Driver) driver.Inspector {
	t.Helper()
	i, ok := d.(driver.Inspector)
	if !ok {
		t.Fatalf("%T is not a driver.Inspector", d)
	}
	return i
}

// newOwner returns a fresh owner token.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// testContext is a context that ends with the test, or after promptly×6.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 6*promptly)
	t.Cleanup(cancel)
	return ctx
}

// pingpong is the "pingpong" child: on stdin's commands it takes the key
// ("take"), waits for it ("wait": says "ready", then Blocks, then says
// "acquired <unix ns>"), or releases it after handoffHold ("release": says
// "released <unix ns>", the moment it began to release). With a flock path
// in envMark it does the same with flock(2) on that file instead: the
// kernel's own hand-off, measured in the same run.
func pingpong(d driver.Driver) error {
	key, flockPath := os.Getenv(envKey), os.Getenv(envMark)
	var take, wait func() error
	var release func()
	if flockPath != "" {
		f, err := os.OpenFile(flockPath, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return err
		}
		defer f.Close()
		fd := int(f.Fd())
		take = func() error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) }
		wait = func() error { return syscall.Flock(fd, syscall.LOCK_EX) }
		release = func() { _ = syscall.Flock(fd, syscall.LOCK_UN) }
	} else {
		m := lock.New(d)
		defer m.Close()
		l := m.Make(key, time.Minute)
		ctx := context.Background()
		take = func() error {
			if ok, err := l.Acquire(ctx); err != nil || !ok {
				return fmt.Errorf("acquire = %v, %v", ok, err)
			}
			return nil
		}
		wait = func() error { return l.Block(ctx, lock.WithTimeout(time.Minute)) }
		release = func() { _ = l.Release(ctx) }
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "take":
			if err := take(); err != nil {
				return err
			}
			fmt.Println("held")
		case "wait":
			fmt.Println("ready")
			if err := wait(); err != nil {
				return err
			}
			fmt.Println("acquired", time.Now().UnixNano())
		case "release":
			time.Sleep(handoffHold)
			at := time.Now().UnixNano()
			release()
			fmt.Println("released", at, time.Now().UnixNano())
		}
	}
	return in.Err()
}

// fair is the "fair" child: after "go <deadline unix ns>" on stdin it takes
// the key with Block again and again until the deadline, proving in the
// marker file that nobody else is inside, and says how often it got it.
func fair(d driver.Driver) error {
	m := lock.New(d)
	defer m.Close()
	l := m.Make(os.Getenv(envKey), time.Minute)
	fmt.Println("ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	deadlineNS, perr := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "go "), 10, 64)
	if err != nil || perr != nil {
		return fmt.Errorf("want go <deadline>, got %q: %v %v", line, err, perr)
	}
	deadline := time.Unix(0, deadlineNS)
	ctx := context.Background()
	n := 0
	for time.Now().Before(deadline) {
		if err := l.Block(ctx, lock.WithTimeout(time.Minute)); err != nil {
			return err
		}
		mark, err := os.OpenFile(os.Getenv(envMark), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("two holders at once: %w", err)
		}
		_ = mark.Close()
		// The work: long enough that a process the scheduler holds back
		// after its release is queued again before its turn comes, so
		// that the counts measure the queue, not the CPU scheduler of a
		// loaded machine (with an instant hold, a process descheduled
		// between Release and its next Block misses whole rounds).
		time.Sleep(fairHold)
		if err := os.Remove(os.Getenv(envMark)); err != nil {
			return err
		}
		n++
		if err := l.Release(ctx); err != nil {
			return err
		}
	}
	fmt.Println("count", n)
	return nil
}

// queueChild is the "queue" child: it says "ready", waits for the key with
// AcquireWait and says "acquired", then holds it until stdin closes and
// releases it.
func queueChild(d driver.Driver) error {
	fmt.Println("ready")
	owner := fmt.Sprintf("%032x", os.Getpid())
	w, ok := d.(driver.Waiter)
	if !ok {
		return errors.New("the driver is not a driver.Waiter")
	}
	if _, err := w.AcquireWait(context.Background(), os.Getenv(envKey), owner, time.Minute); err != nil {
		return err
	}
	fmt.Println("acquired")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	if ok, err := d.Release(context.Background(), os.Getenv(envKey), owner); err != nil || !ok {
		return fmt.Errorf("release = %v, %v", ok, err)
	}
	return nil
}

// talker is a child driven through stdin and stdout.
type talker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startTalker starts a child in role on store, with env added.
func startTalker(t testing.TB, role, store string, env ...string) *talker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{envRole + "=" + role, envStore + "=" + store}, env...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &talker{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// say sends one command line.
func (c *talker) say(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatalf("child %d: %v", c.cmd.Process.Pid, err)
	}
}

// expect reads the child's next line, which must start with word, and
// returns the rest.
func (c *talker) expect(t testing.TB, word string) string {
	t.Helper()
	line, err := c.out.ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), word)
	if !ok {
		t.Fatalf("child %d said %q (%v); want %q", c.cmd.Process.Pid, line, err, word)
	}
	return strings.TrimSpace(rest)
}

// expectTimes reads "<word> <unix ns>...".
func (c *talker) expectTimes(t testing.TB, word string) []int64 {
	t.Helper()
	var ns []int64
	for _, f := range strings.Fields(c.expect(t, word)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ns = append(ns, n)
	}
	return ns
}

// pair is two pingpong children handing one lock back and forth.
type pair struct{ holder, waiter *talker }

func newPair(b *testing.B, store string, env ...string) *pair {
	p := &pair{startTalker(b, "pingpong", store, env...), startTalker(b, "pingpong", store, env...)}
	p.holder.say(b, "take")
	p.holder.expect(b, "held")
	return p
}

// handoff makes the waiter wait, the holder release, and returns the time
// from the start of the release to the waiter holding the lock, and from
// the end of the release (its commit done) to the same moment.
func (p *pair) handoff(b *testing.B) (total, wake time.Duration) {
	p.waiter.say(b, "wait")
	p.waiter.expect(b, "ready")
	p.holder.say(b, "release")
	released := p.holder.expectTimes(b, "released")
	acquired := p.waiter.expectTimes(b, "acquired")
	if len(released) != 2 || len(acquired) != 1 {
		b.Fatalf("released %v, acquired %v", released, acquired)
	}
	p.holder, p.waiter = p.waiter, p.holder
	return time.Duration(acquired[0] - released[0]), time.Duration(acquired[0] - released[1])
}

// Handoff measures release in one process → the waiter in another holding
// the lock (p50, p99; wake-*: from the release's commit instead of its
// start), through the driver (lock.Block in the waiter, ManagedLock.Release
// in the holder) and through flock(2) on one file, interleaved hand-off by
// hand-off so that load falls on both alike.
func (s Suite) Handoff(b *testing.B) {
	dir := b.TempDir()
	store := s.Store(dir)
	s.prepare(b, store)
	key := "handoff"
	ours := newPair(b, store, envKey+"="+key)
	kernel := newPair(b, store, envMark+"="+filepath.Join(dir, "flock"), envKey+"="+key)
	var o, w, k []time.Duration
	for b.Loop() {
		total, wake := ours.handoff(b)
		o, w = append(o, total), append(w, wake)
		total, _ = kernel.handoff(b)
		k = append(k, total)
	}
	reportHandoff(b, o, w, k)
}

// reportHandoff reports p50 and p99 of each and the ratios of the totals.
func reportHandoff(b *testing.B, ours, wake, kernel []time.Duration) {
	slices.Sort(ours)
	slices.Sort(wake)
	slices.Sort(kernel)
	q := func(d []time.Duration, p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / 1e3 }
	b.ReportMetric(q(ours, 0.5), "p50-µs")
	b.ReportMetric(q(ours, 0.99), "p99-µs")
	b.ReportMetric(q(wake, 0.5), "wake-p50-µs")
	b.ReportMetric(q(wake, 0.99), "wake-p99-µs")
	b.ReportMetric(q(kernel, 0.5), "flock-p50-µs")
	b.ReportMetric(q(kernel, 0.99), "flock-p99-µs")
	b.ReportMetric(q(ours, 0.5)/q(kernel, 0.5), "p50/flock")
	b.ReportMetric(q(ours, 0.99)/q(kernel, 0.99), "p99/flock")
	b.ReportMetric(0, "ns/op") // the round trips through the pipes say nothing
}

// Fair runs 8 processes taking one key with Block over and over for a fixed
// time, each working fairHold under the lock, and checks that they got it
// about equally often (Jain's index ≥ 0.9; a loaded machine delays some
// re-queues) and never two at once.
func (s Suite) Fair(t *testing.T) {
	dir := t.TempDir()
	store := s.Store(dir)
	s.prepare(t, store)
	env := []string{envKey + "=fair", envMark + "=" + filepath.Join(dir, "inside")}
	kids := make([]*talker, fairWaiters)
	for i := range kids {
		kids[i] = startTalker(t, "fair", store, env...)
	}
	for _, k := range kids {
		k.expect(t, "ready")
	}
	deadline := time.Now().Add(fairRun).UnixNano()
	for _, k := range kids {
		k.say(t, "go "+strconv.FormatInt(deadline, 10))
	}
	counts := make([]float64, len(kids))
	for i, k := range kids {
		n, err := strconv.Atoi(k.expect(t, "count"))
		if err != nil {
			t.Fatal(err)
		}
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("fair child %d: %v", i, err)
		}
		counts[i] = float64(n)
	}
	if j := jain(counts); j < 0.9 {
		t.Errorf("acquisitions per process %v: Jain's index %.3f, want ≥ 0.9", counts, j)
	} else {
		t.Logf("acquisitions per process %v: Jain's index %.4f", counts, j)
	}
}

// jain is Jain's fairness index of x: 1 when all are equal, 1/n when one
// got everything.
func jain(x []float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * sq)
}

// tickets lists the tickets queued in every room of store.
func (s Suite) tickets(t testing.TB, store string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(s.Rooms(store), "*", "t.*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// waitForTickets waits until n tickets are queued, and returns them.
func (s Suite) waitForTickets(t testing.TB, store string, n int) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(promptly)
	for got = s.tickets(t, store); len(got) != n; got = s.tickets(t, store) {
		if time.Now().After(deadline) {
			t.Fatalf("queued tickets %v, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
	return got
}

// KilledWaiter queues a waiter in a child process, a second one here behind
// it, kills the child with SIGKILL and releases: the second waiter gets the
// key and the dead waiter's ticket is gone.
func (s Suite) KilledWaiter(t *testing.T) {
	path := s.Store(t.TempDir())
	d := s.open(t, path)
	key, holder := "killed-waiter", newOwner()
	if ok, err := d.Acquire(testContext(t), key, holder, time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	kid := startTalker(t, "queue", path, envKey+"="+key)
	kid.expect(t, "ready")
	first := s.waitForTickets(t, path, 1)
	if !strings.Contains(filepath.Base(first[0]), "."+strconv.Itoa(kid.cmd.Process.Pid)+".") {
		t.Fatalf("ticket %s is not the child's (pid %d)", first[0], kid.cmd.Process.Pid)
	}
	d2 := s.open(t, path)
	owner := newOwner()
	done := make(chan error, 1)
	go func() {
		_, err := waiter(t, d2).AcquireWait(testContext(t), key, owner, time.Minute)
		done <- err
	}()
	s.waitForTickets(t, path, 2)
	if err := kid.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = kid.cmd.Wait()
	if ok, err := d.Release(testContext(t), key, holder); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("AcquireWait behind a killed waiter: %v", err)
		}
	case <-time.After(promptly):
		t.Fatalf("AcquireWait still blocked %v after the release, behind a killed waiter", promptly)
	}
	if left := s.tickets(t, path); len(left) != 0 {
		t.Errorf("tickets left after the hand-off: %v", left)
	}
	if ok, err := d2.Release(testContext(t), key, owner); !ok || err != nil {
		t.Errorf("Release by the waiter that got the key = %v, %v", ok, err)
	}
}

// CancelledBlock cancels a Block waiting behind a holder of another
// process: it returns promptly with the cancellation, leaves no ticket, and
// the key goes to the waiter behind it, never to it.
func (s Suite) CancelledBlock(t *testing.T) {
	path := s.Store(t.TempDir())
	s.prepare(t, path)
	key := "cancelled"
	kid := startTalker(t, "queue", path, envKey+"="+key)
	kid.expect(t, "ready")
	kid.expect(t, "acquired") // the key was free: the child holds it
	m := lock.New(s.open(t, path), lock.WithPrefix(""))
	t.Cleanup(func() { _ = m.Close() })
	l := m.Make(key, time.Minute)
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- l.Block(ctx, lock.WithTimeout(time.Minute)) }()
	s.waitForTickets(t, path, 1)
	behind := s.open(t, path)
	next := newOwner()
	got := make(chan error, 1)
	go func() {
		_, err := waiter(t, behind).AcquireWait(testContext(t), key, next, time.Minute)
		got <- err
	}()
	s.waitForTickets(t, path, 2)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Block after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(promptly):
		t.Fatalf("Block still waiting %v after its context was cancelled", promptly)
	}
	if l.IsAcquired() {
		t.Fatal("the cancelled Block's handle says it holds the key")
	}
	s.waitForTickets(t, path, 1)
	_ = kid.in.Close() // the child releases
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("AcquireWait behind the cancelled Block: %v", err)
		}
	case <-time.After(promptly):
		t.Fatalf("AcquireWait behind a cancelled Block still blocked %v after the holder exited", promptly)
	}
	if h, held, err := inspector(t, behind).Inspect(testContext(t), key); err != nil || !held || h.Owner != next {
		t.Errorf("Inspect = %+v, %v, %v; want held by the waiter behind the cancelled one", h, held, err)
	}
	if left := s.tickets(t, path); len(left) != 0 {
		t.Errorf("tickets left: %v", left)
	}
	if ok, err := behind.Release(testContext(t), key, next); !ok || err != nil {
		t.Errorf("Release = %v, %v", ok, err)
	}
}
