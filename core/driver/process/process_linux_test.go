package process

import (
	"os"
	"os/exec"
	"testing"
)

func TestThisProcessIsAlive(t *testing.T) {
	start := StartTime(os.Getpid())
	if start == 0 {
		t.Fatal("cannot read this process's start time")
	}
	if Exited(os.Getpid(), start) {
		t.Fatal("this process is taken for dead")
	}
	if Scope() == "" {
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
