// Package etcdtest starts private etcd servers for tests: one member or a
// cluster of several, on free loopback ports (never etcd's default 2379 and
// 2380), each member its own process that a test can kill with SIGKILL,
// pause, and restart on its data.
//
//	c := etcdtest.Start(t)           // one member
//	c := etcdtest.StartCluster(t, 3) // three members
//	d, err := etcd.Open(c.URL())
//
// The server is etcd [ServerVersion], built on first use (see [Binary]), or
// the binary $ZEROTAL_ETCD_BIN names. Everything is stopped and removed at
// the test's cleanup. A missing server fails the test with what to install;
// it never skips it.
package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/conformance/testport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Default timing of a test cluster: a heartbeat and election timeout ten
// times shorter than etcd's defaults, so that a failover takes about half a
// second, but long enough that a loaded two-core machine does not start
// spurious elections. With them the server's shortest lease is 1s
// (ceil(1.5 × election timeout)).
const (
	DefaultHeartbeat = 50 * time.Millisecond
	DefaultElection  = 500 * time.Millisecond
)

const (
	// readyTimeout bounds how long a cluster may take to start and elect
	// a leader.
	readyTimeout = 30 * time.Second
	// startTries is how many times a cluster is started on fresh ports
	// when a port found free was taken before etcd bound it.
	startTries = 3
)

// Option configures a cluster.
type Option func(*config)

type config struct {
	heartbeat, election time.Duration
	fsync               bool
	tls                 bool
	args                []string
}

// WithTiming sets the members' heartbeat interval and election timeout.
func WithTiming(heartbeat, election time.Duration) Option {
	return func(c *config) { c.heartbeat, c.election = heartbeat, election }
}

// WithFsync makes the members fsync their write-ahead log as etcd does by
// default. Without it they run with --unsafe-no-fsync, which is faster and
// still survives SIGKILL (the kernel keeps what a killed process wrote);
// only a machine crash would lose data, and test machines do not crash
// mid-test.
func WithFsync() Option { return func(c *config) { c.fsync = true } }

// WithTLS makes the members serve clients over TLS with a certificate, for
// 127.0.0.1 and localhost, signed by a CA made for the cluster: see
// [Cluster.CAFile] and [Cluster.URL]. Peers still talk in the clear.
func WithTLS() Option { return func(c *config) { c.tls = true } }

// WithArgs adds etcd command-line flags to every member.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// Cluster is a private etcd cluster.
type Cluster struct {
	// Members are the cluster's members, in the order of their names
	// (m0, m1, …).
	Members []*Member

	cfg    config
	dir    string
	caFile string
}

// Start starts a one-member cluster for t, stopped at t's cleanup.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	return StartCluster(t, 1, opts...)
}

// StartCluster starts a cluster of n members for t and waits until it has
// elected a leader. The cluster is stopped, and its data removed, at t's
// cleanup.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: StartCluster with %d members; want at least 1", n)
	}
	cfg := config{heartbeat: DefaultHeartbeat, election: DefaultElection}
	for _, o := range opts {
		o(&cfg)
	}
	bin := Binary(t)
	var lastErr error
	for range startTries {
		c := &Cluster{cfg: cfg, dir: t.TempDir()}
		t.Cleanup(c.stop)
		if err := c.start(bin, n); err != nil {
			c.stop()
			lastErr = err
			if errors.Is(err, errPortTaken) {
				continue
			}
			break
		}
		return c
	}
	t.Fatalf("etcdtest: starting a %d-member etcd cluster: %v", n, lastErr)
	return nil
}

// errPortTaken marks a start that failed because a port was taken.
var errPortTaken = errors.New("a port was taken")

// start launches the members on fresh ports and waits until they are ready.
func (c *Cluster) start(bin string, n int) error {
	if c.cfg.tls {
		ca, err := writeCerts(c.dir)
		if err != nil {
			return fmt.Errorf("making TLS certificates: %w", err)
		}
		c.caFile = ca
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return fmt.Errorf("finding free ports: %w", err)
	}
	token := randomHex(8)
	var initial []string
	for i := range n {
		m := &Member{
			Name:       "m" + strconv.Itoa(i),
			ClientPort: ports[2*i],
			PeerPort:   ports[2*i+1],
			bin:        bin,
			cluster:    c,
			dir:        filepath.Join(c.dir, "m"+strconv.Itoa(i)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.peerURL())
	}
	for _, m := range c.Members {
		m.args = m.flags(strings.Join(initial, ","), token)
		if err := m.launch(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for _, m := range c.Members {
		if err := m.waitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stop kills every member and waits for it.
func (c *Cluster) stop() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// Endpoints returns the members' client addresses, host:port.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.Endpoint()
	}
	return eps
}

// URL returns the cluster's URL for the etcd driver's Open: etcd://, or
// etcds:// with the CA file for a TLS cluster, followed by every member's
// address.
func (c *Cluster) URL() string {
	if c.cfg.tls {
		return "etcds://" + strings.Join(c.Endpoints(), ",") + "/?ca_file=" + c.caFile
	}
	return "etcd://" + strings.Join(c.Endpoints(), ",")
}

// CAFile returns the PEM file of the CA that signed a TLS cluster's
// certificate, "" for a cluster without TLS.
func (c *Cluster) CAFile() string { return c.caFile }

// Client returns a client on every member, closed at t's cleanup.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := c.newClient(c.Endpoints()...)
	if err != nil {
		t.Fatalf("etcdtest: client on %v: %v", c.Endpoints(), err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// newClient returns a client on endpoints, quiet and quick to give up.
func (c *Cluster) newClient(endpoints ...string) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	}
	if c.cfg.tls {
		tlsCfg, err := clientTLS(c.caFile)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tlsCfg
	}
	return clientv3.New(cfg)
}

// Leader returns the member that is the leader now, as the running members
// see it: one of them must name a running member, and every running member
// must agree.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	var leader uint64
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		st, err := m.status(ctx)
		if err != nil {
			return nil, fmt.Errorf("status of %s: %w", m.Name, err)
		}
		if st.Leader == 0 {
			return nil, fmt.Errorf("%s has no leader", m.Name)
		}
		if leader != 0 && st.Leader != leader {
			return nil, fmt.Errorf("members disagree on the leader (%x, %x)", leader, st.Leader)
		}
		leader = st.Leader
	}
	for _, m := range c.Members {
		if m.Running() && m.id == leader {
			return m, nil
		}
	}
	return nil, fmt.Errorf("the leader %x is not a running member", leader)
}

// WaitLeader polls Leader until the running members agree on a running
// leader, and fails t if they do not within timeout.
func (c *Cluster) WaitLeader(t testing.TB, timeout time.Duration) *Member {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := c.Leader(ctx)
		cancel()
		if err == nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcdtest: no leader within %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago (see testport.Free), none of them etcd's default ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	seen := map[int]bool{}
	for len(ports) < n {
		port, err := testport.Free()
		if err != nil {
			return nil, err
		}
		if port == 2379 || port == 2380 {
			continue // a shared etcd's ports, should the kernel's range reach them: never ours
		}
		if !seen[port] {
			seen[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}

// tail returns the last lines of the file at path, for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
