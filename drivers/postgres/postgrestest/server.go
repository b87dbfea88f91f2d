// Package postgrestest starts private PostgreSQL servers for tests: a fresh
// cluster made by initdb in a temporary directory, served by the postgres
// binary on a free loopback port, that a test may stop, restart, crash,
// freeze and thaw without touching any shared server.
//
//	s := postgrestest.Start(t)
//	d, err := postgres.Open(s.URL())
//
// The binaries come from $PATH or from Debian's /usr/lib/postgresql/<version>/bin
// (package postgresql). When they are missing, Start fails the test with a
// message saying what to install: it never skips. PostgreSQL refuses to run
// as root, so a root test process runs the server as the "postgres" user that
// the Debian package creates.
package postgrestest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zerotal/lock/conformance/testport"
)

// InstallHint is how a failure to find the PostgreSQL binaries ends.
const InstallHint = "these tests start a private PostgreSQL server and never skip: " +
	"install it (Debian/Ubuntu: apt-get install postgresql)"

// startTimeout bounds how long Start and Restart wait for the server to
// accept connections, generous for a loaded machine.
const startTimeout = 60 * time.Second

// Option configures a Server made by Start.
type Option func(*config)

type config struct {
	settings map[string]string
}

// Setting passes "-c name=value" to the server, overriding the defaults
// (see Start).
func Setting(name, value string) Option {
	return func(c *config) { c.settings[name] = value }
}

// Server is a private PostgreSQL server. Its methods are safe for use by one
// test goroutine at a time; Start registers a cleanup that stops it and
// removes its files.
type Server struct {
	bin  string // directory holding initdb and postgres
	dir  string // the temporary directory: data/ and server.log
	port int
	cred *syscall.Credential // the user the server runs as; nil: this process's
	args []string            // postgres arguments after -D and -p

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	paused bool
}

// Start makes a new cluster with initdb (user postgres, trust
// authentication, UTF8, locale C) and starts it on a free loopback port,
// with no Unix socket. The server keeps PostgreSQL's durable defaults
// (fsync and synchronous_commit on), listens on 127.0.0.1 only, and logs to
// server.log in its directory, which a failure message quotes. Its cleanup
// stops it (an immediate shutdown) and removes the directory.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := config{settings: map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": "",
		"max_connections":         "100",
		"shared_buffers":          "32MB",
		"log_min_messages":        "warning",
		"logging_collector":       "off",
	}}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	bin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	cred, err := serverUser()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "zerotal-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, dir: dir, cred: cred}
	t.Cleanup(func() {
		s.stop(syscall.SIGQUIT)
		_ = os.RemoveAll(dir)
	})
	if cred != nil {
		// MkdirTemp made it 0700 for root; the server's user must own it.
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("postgrestest: handing %s to the postgres user: %v", dir, err)
		}
	}
	if err := s.initdb(); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cfg.settings))
	for name := range cfg.settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s.args = append(s.args, "-c", name+"="+cfg.settings[name])
	}
	// A port found free can be taken by someone else before the server
	// binds it: try a few.
	var lastErr error
	for range 5 {
		if s.port, err = testport.Free(); err != nil {
			t.Fatalf("postgrestest: finding a free port: %v", err)
		}
		if lastErr = s.launch(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("postgrestest: starting postgres: %v", lastErr)
	return nil
}

// debianBins is where Debian's postgresql packages put the server binaries,
// one directory per major version; a variable so that a test can point it
// at an empty place.
var debianBins = "/usr/lib/postgresql/*/bin/initdb"

// binDir finds the directory with initdb and postgres: $PATH first, then the
// newest /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob(debianBins)
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("postgrestest: initdb and postgres not found on $PATH nor in /usr/lib/postgresql/*/bin; " + InstallHint)
}

// version returns the major version in a /usr/lib/postgresql/<v>/bin path.
func version(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// serverUser returns the credentials to run the server with: nil when this
// process is not root, else the postgres user's, since the server will not
// run as root.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgrestest: running as root, and PostgreSQL refuses to: no \"postgres\" user to run it as (%v); %s", err, InstallHint)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgrestest: user postgres has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

// command returns a command running the binary name from s.bin as the
// server's user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// initdb makes the cluster in s.dataDir().
func (s *Server) initdb() error {
	cmd := s.command("initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("postgrestest: initdb: %v\n%s", err, out)
	}
	return nil
}

// launch starts postgres on s.port and waits until it accepts connections.
func (s *Server) launch() error {
	log, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	args := append([]string{"-D", s.dataDir(), "-p", strconv.Itoa(s.port)}, s.args...)
	cmd := s.command("postgres", args...)
	cmd.Stdout, cmd.Stderr = log, log
	// A crash of this test process takes the server down with it (SIGQUIT
	// is an immediate shutdown).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL())
		if err == nil {
			err = s.isOwnServer(ctx, conn)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres on port %d exited:\n%s", s.port, s.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop(syscall.SIGQUIT)
			return fmt.Errorf("postgres on port %d did not accept connections within %v: %w\n%s", s.port, startTimeout, err, s.Log())
		}
	}
}

// isOwnServer checks that conn reached this Server's postgres, not another
// one that took the port first (another test's server, started between the
// check that the port was free and this server's bind): the data directory
// it serves must be ours.
func (s *Server) isOwnServer(ctx context.Context, conn *pgx.Conn) error {
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return err
	}
	theirs, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("port %d serves data directory %s, not ours: %w", s.port, dir, err)
	}
	ours, err := os.Stat(s.dataDir())
	if err != nil {
		return err
	}
	if !os.SameFile(theirs, ours) {
		return fmt.Errorf("port %d serves data directory %s, not ours (%s)", s.port, dir, s.dataDir())
	}
	return nil
}

// Log returns what the server has logged so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath())
	return strings.TrimSpace(string(b))
}

// Port returns the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr returns the server's address, "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns a connection URL for database postgres as user postgres.
func (s *Server) URL() string {
	return "postgres://postgres@" + s.Addr() + "/postgres?sslmode=disable"
}

// PID returns the postmaster's process id, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop shuts the server down cleanly (a fast shutdown: sessions are ended,
// data is checkpointed) and waits for it to exit.
func (s *Server) Stop() { s.stop(syscall.SIGINT) }

// Kill ends the server and every backend at once with SIGKILL, as a crash
// or a power cut of the process would (the operating system keeps what was
// written, so committed transactions survive, as they do on disk with
// fsync on); the next start runs crash recovery.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

// Restart stops the server cleanly and starts it again on the same port and
// data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.Start(t)
}

// Start starts a stopped or killed server again on the same port and data,
// and waits until it accepts connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.PID() != 0 {
		t.Fatal("postgrestest: Start on a server that is running")
	}
	if err := s.launch(); err != nil {
		t.Fatalf("postgrestest: restarting postgres: %v", err)
	}
}

// Pause freezes the server and every backend with SIGSTOP: connections stay
// open and the server reads nothing, like a host that hangs. Resume thaws
// it; the cleanup thaws a paused server before it stops it.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP) // first, so that it forks no more
	for _, c := range children(pid) {
		_ = syscall.Kill(c, syscall.SIGSTOP)
	}
	s.paused = true
}

// Resume thaws a server frozen by Pause.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	resume(s.cmd.Process.Pid)
	s.paused = false
}

func resume(pid int) {
	for _, c := range children(pid) {
		_ = syscall.Kill(c, syscall.SIGCONT)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
}

// children returns the pids of the processes whose parent is pid, from
// /proc. Every backend makes itself a process group leader, so signalling
// the postmaster's group would not reach them.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// running reports whether process pid exists and is not a zombie (a
// container's init may be slow to reap the backends it inherits).
func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && len(stat) > i+2 && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// stop ends the server with sig and waits for it, and for every backend, to
// be gone. SIGKILL goes to the postmaster and to each backend, as in a crash;
// SIGINT (fast) and SIGQUIT (immediate) are shutdowns the postmaster carries
// out itself.
func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited, paused := s.cmd, s.exited, s.paused
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	pid := cmd.Process.Pid
	if sig == syscall.SIGKILL {
		_ = syscall.Kill(pid, syscall.SIGSTOP) // so that it forks no more
	} else if paused {
		resume(pid)
	}
	backends := children(pid)
	if sig == syscall.SIGKILL {
		for _, c := range backends {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	// A backend outliving its postmaster keeps the shared memory in use,
	// and the next start would refuse to run. A shutdown waits for them;
	// after SIGKILL they may take a moment.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		alive := false
		for _, c := range backends {
			alive = alive || running(c)
		}
		if !alive {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
