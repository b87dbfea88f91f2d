package main

import (
	"bufio"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startRedis starts a private redis-server on a free loopback port, keeping
// nothing on disk, and returns its URL and a function that kills it. The
// test never touches a shared server; without redis-server it fails, saying
// what to install.
func startRedis(t *testing.T) (url string, kill func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found on PATH; the Redis tests start a private server and never skip: install it (Debian/Ubuntu: apt-get install redis-server)")
	}
	dir := t.TempDir()
	for range 5 { // a port found free can be taken before redis-server binds it
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
		go func() { _ = cmd.Wait(); close(exited) }()
		kill := func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		t.Cleanup(kill)
		if pingRedis(addr, exited) {
			return "redis://" + addr, kill
		}
	}
	t.Fatal("redis-server did not start on a free port in five tries")
	return "", nil
}

// pingRedis waits until the server at addr answers PING, or exits.
func pingRedis(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			reply, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(reply, "+PONG") {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// Redis cannot see that a holder on another host died: a killed holder's
// lock is freed when its TTL passes, not before.
func TestRedisHolderKilledFreesTheKeyAfterItsTTL(t *testing.T) {
	h := newHarness(t)
	url, _ := startRedis(t)
	h.env = append(h.env, "LOCK_DRIVER=redis", "REDIS_URL="+url)
	holder, id, _ := h.startHolder("deploy", "--ttl", "2s")
	if id.token == 0 {
		t.Error("LOCK_TOKEN is 0 on the redis driver, want a fencing token")
	}
	s := h.status(nil, "deploy")
	if l := s.Locks[0]; !l.Held || l.PID != holder.cmd.Process.Pid || l.Token != id.token || l.Owner != id.owner {
		t.Errorf("status %+v, want held by pid %d with the command's owner and token", l, holder.cmd.Process.Pid)
	}
	h.mustRun(exitBusy, "run", "--key", "deploy", "--", "true")

	holder.signal(t, syscall.SIGKILL)
	killed := time.Now()
	if code := holder.wait(t); code != -1 {
		t.Fatalf("holder exited %d, want death by SIGKILL", code)
	}
	r := h.mustRun(0, "run", "--key", "deploy", "--wait", "1m", "--", "sh", "-c", `echo "$LOCK_TOKEN"`)
	// The holder refreshed every TTL/3, so its lock ended between 1.3s and
	// 2s after the kill; well under that means the TTL was not respected.
	if waited := time.Since(killed); waited < time.Second {
		t.Errorf("took the key %v after the holder was killed, before its 2s TTL could have passed", waited)
	}
	if token, _ := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64); token <= id.token {
		t.Errorf("new holder's token %s, want more than %d", r.stdout, id.token)
	}
}

// When the backend goes away, a waiting lockctl fails with 70 (the backend
// failed after it was reached), and a holding one loses its lock once its
// TTL has passed without a refresh: its command is stopped and it exits 79.
func TestRedisGoingAway(t *testing.T) {
	h := newHarness(t)
	url, kill := startRedis(t)
	h.env = append(h.env, "LOCK_DRIVER=redis", "REDIS_URL="+url)
	holder, id, _ := h.startHolder("deploy", "--ttl", "2s", "--grace", "30s")
	waiter := h.start("run", "--key", "deploy", "--wait", "5m", "--verbose", "--", "true")
	waiter.stderr.waitFor(t, "waiting up to")

	kill()
	killed := time.Now()
	if code := waiter.wait(t); code != exitSoftware {
		t.Errorf("waiter exited %d, want %d; stderr:\n%s", code, exitSoftware, waiter.stderr.text())
	}
	waiter.stderr.waitFor(t, "cannot take the lock")

	if code := holder.wait(t); code != exitLost {
		t.Errorf("holder exited %d, want %d; stderr:\n%s", code, exitLost, holder.stderr.text())
	}
	// The command (holdScript, which ends on SIGTERM) was stopped, not
	// left to run on without the lock, and not before the lock could have
	// ended: the last refresh was at most a third of the TTL before the kill.
	if lost := time.Since(killed); lost < time.Second {
		t.Errorf("holder gave up %v after Redis died, before its 2s TTL could have passed", lost)
	}
	holder.stderr.waitFor(t, "lost the lock")
	if !processGone(id.pid) {
		t.Errorf("the command (pid %d) outlived lockctl", id.pid)
	}
}
