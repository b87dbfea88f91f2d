// Package redistest starts private Redis deployments for tests and
// benchmarks: a single server, a Redis Cluster of masters and replicas, or a
// sentinel watching a primary and its replicas. Each server listens on a
// free loopback port (never 6379), keeps nothing on disk and can be killed,
// paused and restarted, so that fault tests touch nothing shared.
//
// The functions taking a testing.TB fail the test, naming the package to
// install, when redis-server is missing, and stop everything at cleanup.
// Start is the same for programs (tools/bench).
package redistest

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
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/zerotal/lock/conformance/testport"
)

// ErrNoServer is returned when redis-server cannot be found.
var ErrNoServer = errors.New("redis-server not found on PATH: install it (Debian/Ubuntu: apt-get install redis-server)")

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 15 * time.Second

// Server is a private redis-server process.
type Server struct {
	bin   string
	dir   string
	port  int
	extra []string

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// Start starts redis-server with the extra arguments on a free loopback
// port, keeping its files (log, cluster state) in dir, and waits until it
// answers PING.
func Start(dir string, extra ...string) (*Server, error) {
	return StartBinary("", dir, extra...)
}

// StartBinary is Start with the redis-server binary bin (redis-server on
// PATH when bin is empty), for a program that lets its user pick one.
func StartBinary(bin, dir string, extra ...string) (*Server, error) {
	var err error
	if bin == "" {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, ErrNoServer
		}
	} else if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoServer, err)
	}
	s := &Server{bin: bin, dir: dir, extra: extra}
	// A port found free can be taken before redis-server binds it.
	var lastErr error
	for range 5 {
		if s.port, err = testport.Free(); err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("starting redis-server: %w", lastErr)
}

// StartT is Start for a test: the server's files live in t.TempDir(), a
// failure fails t, and the server is killed at cleanup.
func StartT(t testing.TB, extra ...string) *Server {
	t.Helper()
	s, err := Start(t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// launch starts redis-server on s.port and waits until it answers PING.
func (s *Server) launch() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", s.logPath(),
		"--daemonize", "no",
	}, s.extra...)
	return s.run(exec.Command(s.bin, args...))
}

// run starts cmd as s's process and waits until the server answers PING.
func (s *Server) run(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	client := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		if err == nil {
			// The answer may come from another test's server that took
			// the port first: ours then exits, unable to bind.
			err = s.answersAsItself(ctx, client)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, s.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on port %d did not answer PING: %w", s.port, err)
		}
	}
}

// answersAsItself returns nil when the server answering on s's port is s's
// own process.
func (s *Server) answersAsItself(ctx context.Context, client *goredis.Client) error {
	info, err := client.InfoMap(ctx, "server").Result()
	if err != nil {
		return err
	}
	if pid := info["Server"]["process_id"]; pid != strconv.Itoa(s.cmd.Process.Pid) {
		return fmt.Errorf("port %d is answered by redis-server pid %s, not ours (%d)", s.port, pid, s.cmd.Process.Pid)
	}
	return nil
}

func (s *Server) logPath() string { return filepath.Join(s.dir, "redis-"+strconv.Itoa(s.port)+".log") }

// Log returns what the server has written to its log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath())
	return string(b)
}

// Kill stops the server with SIGKILL and waits for it to exit; a killed
// server stays killed.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server dies too
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// Stop shuts the server down cleanly (SHUTDOWN NOSAVE), so that a tool it
// runs under (a profiler) writes its results, and waits for it to exit,
// killing it if it has not within a minute.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	_ = c.ShutdownNoSave(context.Background()).Err()
	_ = c.Close()
	select {
	case <-s.exited:
		s.cmd = nil
	case <-time.After(time.Minute):
		s.Kill()
	}
}

// Restart kills the server and starts a new one on the same port, with no
// data (and, for a cluster node, its saved cluster state).
func (s *Server) Restart() error {
	s.Kill()
	return s.launch()
}

// Pause stops the server with SIGSTOP: it keeps its connections and answers
// nothing, like a frozen host. Resume undoes it.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// PID is the server process's id, 0 when it is not running.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Port is the server's port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Client returns a plain go-redis client on the server; the caller closes it.
func (s *Server) Client() *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: s.Addr()})
}

// Cluster is a private Redis Cluster: masters that share the 16384 slots
// between them, each with its replicas.
type Cluster struct {
	Masters  []*Server
	Replicas []*Server // Replicas[i] follows Masters[i / replicasPerMaster]
}

// StartCluster starts a cluster of masters, each with replicas replicas,
// on free loopback ports, with a node timeout of nodeTimeout (how long a
// master may be unreachable before its replica takes over), and waits
// until every node reports cluster_state:ok and every replica is attached.
func StartCluster(t testing.TB, masters, replicas int, nodeTimeout time.Duration) *Cluster {
	t.Helper()
	args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10)}
	c := &Cluster{}
	for i := range masters * (1 + replicas) {
		// Each node needs a directory of its own for nodes.conf.
		dir := filepath.Join(t.TempDir(), "node"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		s, err := Start(dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Kill)
		if i < masters {
			c.Masters = append(c.Masters, s)
		} else {
			c.Replicas = append(c.Replicas, s)
		}
	}
	if err := c.form(masters, replicas); err != nil {
		t.Fatalf("forming the cluster: %v", err)
	}
	return c
}

// Nodes returns every node, masters first.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Addrs returns every node's address, masters first.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Nodes() {
		out = append(out, s.Addr())
	}
	return out
}

// URL is the cluster's redis+cluster:// URL, which the Redis driver opens:
// the first master, and the others as addr= parameters.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	q := make([]string, 0, len(addrs)-1)
	for _, a := range addrs[1:] {
		q = append(q, "addr="+a)
	}
	return "redis+cluster://" + addrs[0] + "?" + strings.Join(q, "&")
}

// form joins the nodes, shares out the slots and attaches the replicas.
func (c *Cluster) form(masters, replicas int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes := c.Nodes()
	clients := make([]*goredis.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.Client()
		defer clients[i].Close()
	}
	for i, s := range c.Masters {
		lo := i * 16384 / masters
		hi := (i+1)*16384/masters - 1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("ADDSLOTSRANGE on %s: %w", s.Addr(), err)
		}
	}
	for _, cl := range clients[1:] {
		if err := cl.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(nodes[0].Port())).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET: %w", err)
		}
	}
	if err := wait(ctx, func() bool {
		for _, cl := range clients {
			out, err := cl.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(out), "\n")+1 != len(nodes) || strings.Contains(out, "handshake") {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("the nodes did not all meet: %w", err)
	}
	for i := range c.Replicas {
		master := clients[i/replicas]
		id, err := master.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return err
		}
		if err := clients[masters+i].Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
			return fmt.Errorf("CLUSTER REPLICATE: %w", err)
		}
	}
	return wait(ctx, func() bool {
		for _, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		for _, cl := range clients[masters:] {
			info, err := cl.Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		return true
	})
}

// Sentinel is a private primary with replicas and the sentinels watching it.
type Sentinel struct {
	Master    *Server
	Replicas  []*Server
	Sentinels []*Server
	Name      string // the master name the sentinels know it by
}

// StartSentinel starts a primary with replicas replicas and sentinels
// sentinels watching it under the name "zerotal", which take it for down
// after downAfter without an answer, and waits until every sentinel sees
// the primary and its replicas.
func StartSentinel(t testing.TB, replicas, sentinels int, downAfter time.Duration) *Sentinel {
	t.Helper()
	st := &Sentinel{Name: "zerotal"}
	st.Master = StartT(t)
	for range replicas {
		st.Replicas = append(st.Replicas, StartT(t, "--replicaof", "127.0.0.1", strconv.Itoa(st.Master.Port())))
	}
	quorum := sentinels/2 + 1
	for range sentinels {
		s, err := startSentinel(t.TempDir(), st, quorum, downAfter)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Kill)
		st.Sentinels = append(st.Sentinels, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := wait(ctx, func() bool {
		for _, s := range st.Sentinels {
			sc := goredis.NewSentinelClient(&goredis.Options{Addr: s.Addr()})
			rs, err := sc.Replicas(ctx, st.Name).Result()
			ss, err2 := sc.Sentinels(ctx, st.Name).Result()
			sc.Close()
			if err != nil || err2 != nil || len(rs) != replicas || len(ss) != sentinels-1 {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("the sentinels did not see the primary, its %d replicas and each other: %v", replicas, err)
	}
	return st
}

// startSentinel starts one sentinel of st in dir.
func startSentinel(dir string, st *Sentinel, quorum int, downAfter time.Duration) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	s := &Server{bin: bin, dir: dir}
	var lastErr error
	for range 5 {
		if s.port, err = testport.Free(); err != nil {
			return nil, err
		}
		conf := filepath.Join(dir, "sentinel-"+strconv.Itoa(s.port)+".conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s 127.0.0.1 %d %d\n"+
			"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s %d\n",
			s.port, dir, s.logPath(), st.Name, st.Master.Port(), quorum,
			st.Name, downAfter.Milliseconds(), st.Name, 4*downAfter.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		if lastErr = s.run(exec.Command(bin, conf, "--sentinel")); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("starting a sentinel: %w", lastErr)
}

// URL is the redis+sentinel:// URL of the deployment, which the Redis
// driver opens: the first sentinel, the others as addr= parameters, and the
// master's name.
func (st *Sentinel) URL() string {
	q := []string{"master_name=" + st.Name}
	for _, s := range st.Sentinels[1:] {
		q = append(q, "addr="+s.Addr())
	}
	return "redis+sentinel://" + st.Sentinels[0].Addr() + "?" + strings.Join(q, "&")
}

// wait polls cond until it holds or ctx ends.
func wait(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
