package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one etcd process of a Cluster.
type Member struct {
	Name       string // m0, m1, …
	ClientPort int    // on 127.0.0.1
	PeerPort   int    // on 127.0.0.1

	bin     string
	args    []string
	cluster *Cluster
	dir     string // the data directory, kept across restarts
	id      uint64 // the member id, learnt when it is first ready

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
}

// Endpoint returns the member's client address, host:port.
func (m *Member) Endpoint() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ClientPort))
}

// ID returns the member's id in the cluster.
func (m *Member) ID() uint64 { return m.id }

func (m *Member) clientURL() string {
	scheme := "http"
	if m.cluster.cfg.tls {
		scheme = "https"
	}
	return scheme + "://" + m.Endpoint()
}

func (m *Member) peerURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(m.PeerPort))
}

func (m *Member) logPath() string { return m.dir + ".log" }

// flags returns the member's command line. On a restart etcd ignores the
// initial-cluster flags and recovers the membership from its data.
func (m *Member) flags(initialCluster, token string) []string {
	cfg := m.cluster.cfg
	args := []string{
		"--name", m.Name,
		"--data-dir", m.dir,
		"--listen-client-urls", m.clientURL(),
		"--advertise-client-urls", m.clientURL(),
		"--listen-peer-urls", m.peerURL(),
		"--initial-advertise-peer-urls", m.peerURL(),
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", token,
		"--heartbeat-interval", strconv.FormatInt(cfg.heartbeat.Milliseconds(), 10),
		"--election-timeout", strconv.FormatInt(cfg.election.Milliseconds(), 10),
		"--log-level", "warn",
	}
	if !cfg.fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	if cfg.tls {
		dir := filepath.Dir(m.cluster.caFile)
		args = append(args, "--cert-file", filepath.Join(dir, "server.pem"), "--key-file", filepath.Join(dir, "server-key.pem"))
	}
	return append(args, cfg.args...)
}

// launch starts the member's process.
func (m *Member) launch() error {
	log, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// waitReady waits until the member answers and knows a leader.
func (m *Member) waitReady(ctx context.Context) error {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	var lastErr error
	for {
		st, err := m.status(ctx)
		if err == nil && st.Leader != 0 {
			m.id = st.Header.MemberId
			return nil
		}
		if err == nil {
			err = errors.New("no leader yet")
		}
		lastErr = err
		select {
		case <-exited:
			log := tail(m.logPath())
			err := fmt.Errorf("etcd member %s exited at start:\n%s", m.Name, log)
			if strings.Contains(log, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("etcd member %s not ready within %v (%v); its log:\n%s", m.Name, readyTimeout, lastErr, tail(m.logPath()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// status asks the member for its status on a client of its own.
func (m *Member) status(ctx context.Context) (*clientv3.StatusResponse, error) {
	cli, err := m.cluster.newClient(m.Endpoint())
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cli.Status(ctx, m.Endpoint())
}

// Running reports whether the member's process is running (paused counts).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill stops the member with SIGKILL, as a crash would, and waits for the
// process to exit. Killing a member that is not running does nothing.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart starts a killed member again on its data and ports, and waits
// until it is ready; it fails t if the member does not come back.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	m.Kill()
	if err := m.launch(); err != nil {
		t.Fatalf("etcdtest: restarting %s: %v", m.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := m.waitReady(ctx); err != nil {
		t.Fatalf("etcdtest: restarting %s: %v", m.Name, err)
	}
}

// Pause stops the member with SIGSTOP: it keeps its sockets open and
// answers nothing, like a hung or partitioned server. Resume continues it.
func (m *Member) Pause() { m.signal(syscall.SIGSTOP) }

// Resume continues a member stopped by Pause.
func (m *Member) Resume() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}
