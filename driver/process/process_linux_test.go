package process

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestThisProcessIsAlive(t *testing.T) {
	me := Self()
	if me.Start == 0 || me.PID != os.Getpid() {
		t.Fatalf("Self() = %+v: cannot read this process's start time", me)
	}
	if Exited(me.PID, me.Start) {
		t.Fatal("this process is taken for dead")
	}
	if me.Scope == "" {
		t.Fatal("no scope on Linux")
	}
}

func TestARecycledPidIsNotTheHolder(t *testing.T) {
	start := StartTime(os.Getpid())
	if !Exited(os.Getpid(), start+1) {
		t.Fatal("a live pid with another start time is taken for the holder")
	}
}

func TestAnExitedChildIsDead(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := StartTime(pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !Exited(pid, start) {
		t.Fatal("an exited and reaped child is taken for alive")
	}
}

func TestNonsensePidsAreNeverDead(t *testing.T) {
	for _, pid := range []int{0, -1, 1 << 40} {
		if Exited(pid, 1) {
			t.Fatalf("pid %d taken for dead", pid)
		}
	}
}

// TestAProcessWhoseMainThreadExitedIsAlive runs a C program whose main
// thread calls pthread_exit while a worker thread goes on: its thread-group
// leader is a zombie, and the process holds its locks all the same.
func TestAProcessWhoseMainThreadExitedIsAlive(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("this test needs a C compiler (apt-get install gcc)")
	}
	bin := filepath.Join(t.TempDir(), "leader_exits")
	if out, err := exec.Command(cc, "-pthread", "-o", bin, "testdata/leader_exits.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
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
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	start := StartTime(pid)
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the program said %q, %v", line, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, state, err := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil && state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the main thread did not become a zombie: state %q, %v", state, err)
		}
		time.Sleep(time.Millisecond)
	}
	if Exited(pid, start) {
		t.Fatal("a process with a live worker thread is taken for dead because its main thread exited")
	}
	stdin.Close() // the worker exits the process
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !Exited(pid, start) {
		t.Fatal("the process has exited and been reaped, but is taken for alive")
	}
}

// timeNSChildEnv makes the test binary print its own view of itself and
// wait for stdin to close, as a holder in another time namespace would.
const timeNSChildEnv = "ZEROTAL_PROCESS_TIMENS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(timeNSChildEnv) != "" {
		me := Self()
		os.Stdout.WriteString(strconv.FormatUint(me.Start, 10) + " " + me.Scope + "\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAHolderInAnotherTimeNamespaceIsNotJudged starts a process in a time
// namespace whose boot time is shifted: the start time it records for
// itself differs from the one this process reads for it, so without the
// time namespace in the scope its lock would be taken as a recycled pid's.
func TestAHolderInAnotherTimeNamespaceIsNotJudged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare -T needs root (CI runs as root)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatal("this test needs unshare (apt-get install util-linux)")
	}
	cmd := exec.Command(unshare, "-T", "--boottime", "100000", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), timeNSChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child in the other time namespace said nothing: %v", err)
	}
	ownStart, scope, _ := strings.Cut(strings.TrimSpace(line), " ")
	recorded, err := strconv.ParseUint(ownStart, 10, 64)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	pid := cmd.Process.Pid // unshare execs the child in place
	if seen := StartTime(pid); seen == recorded {
		t.Fatalf("the child's start time reads %d in both namespaces: the namespace did not shift it", seen)
	}
	if scope == Self().Scope || scope == "" {
		t.Fatalf("the child's scope %q is this process's: its liveness would be judged by a start time from another timeline", scope)
	}
}
