package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// startRedis starts a private redis-server on a free loopback port (the
// driver's launcher, shared with its own tests and tools/bench) and returns
// its URL and a function that kills it.
func startRedis(t *testing.T) (url string, kill func()) {
	t.Helper()
	s := redistest.StartT(t)
	return s.URL(), s.Kill
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

// --url reaches every Redis deployment, a Sentinel-watched master and a
// Cluster included, and two lockctl runs on one key exclude each other there.
func TestRedisDeploymentsByURL(t *testing.T) {
	standalone := redistest.StartT(t)
	cluster := redistest.StartCluster(t, 3, 0, 2*time.Second)
	sentinel := redistest.StartSentinel(t, 1, 1, 5*time.Second)
	for _, c := range []struct{ name, url string }{
		{"standalone", standalone.URL()},
		{"cluster", cluster.URL()},
		{"sentinel", sentinel.URL()},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			holder, id, release := h.startHolder("deploy", "--url", c.url)
			if id.token == 0 {
				t.Errorf("LOCK_TOKEN is 0 through %s, want a fencing token", c.url)
			}
			h.mustRun(exitBusy, "run", "--url", c.url, "--key", "deploy", "--", "true")
			h.env = append(h.env, "LOCK_URL="+c.url) // the same through the environment
			if s := h.status(nil, "deploy"); !s.Locks[0].Held || s.Locks[0].Token != id.token {
				t.Errorf("status through LOCK_URL = %+v; want held with token %d", s.Locks[0], id.token)
			}
			release()
			if code := holder.wait(t); code != 0 {
				t.Fatalf("holder exited %d", code)
			}
			r := h.mustRun(0, "run", "--key", "deploy", "--", "sh", "-c", `echo "$LOCK_TOKEN"`)
			if token, _ := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64); token <= id.token {
				t.Errorf("next holder's token %q, want more than %d", r.stdout, id.token)
			}
		})
	}
}
