package postgrestest

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func query(t *testing.T, s *Server, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		if err := rows.Scan(&out); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStartRestartKill(t *testing.T) {
	start := time.Now()
	s := Start(t)
	t.Logf("started in %v", time.Since(start))
	if got := query(t, s, "SELECT current_setting('fsync')"); got != "on" {
		t.Fatalf("fsync = %q; want on", got)
	}
	query(t, s, "CREATE TABLE kept AS SELECT 'survives'::text AS v")
	start = time.Now()
	s.Restart(t)
	t.Logf("restarted in %v", time.Since(start))
	if got := query(t, s, "SELECT v FROM kept"); got != "survives" {
		t.Fatalf("after restart: %q", got)
	}
	start = time.Now()
	s.Kill()
	s.Start(t)
	t.Logf("killed and started in %v", time.Since(start))
	if got := query(t, s, "SELECT v FROM kept"); got != "survives" {
		t.Fatalf("after kill: %q", got)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends the
// goroutine, so that a test can check what Start says when it fails.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingBinariesFailWithInstallHint(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := debianBins
	debianBins = filepath.Join(t.TempDir(), "*", "bin", "initdb")
	defer func() { debianBins = saved }()
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(rec)
		rec.msg = "Start returned"
	}()
	<-done
	if !strings.Contains(rec.msg, "apt-get install postgresql") {
		t.Fatalf("Start without the PostgreSQL binaries said %q; want a failure naming the package to install", rec.msg)
	}
}

func TestPauseFreezesAndResumeThaws(t *testing.T) {
	s := Start(t)
	conn, err := pgx.Connect(t.Context(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	s.Pause()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	err = conn.Ping(ctx)
	cancel()
	if err == nil {
		t.Fatal("a paused server answered a ping")
	}
	s.Resume()
	if got := query(t, s, "SELECT 'thawed'"); got != "thawed" {
		t.Fatalf("after Resume: %q", got)
	}
}

func TestAServerOnItsPortIsNotOurs(t *testing.T) {
	a, b := Start(t), Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, a.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := a.isOwnServer(ctx, conn); err != nil {
		t.Fatalf("a's own server: %v", err)
	}
	if err := b.isOwnServer(ctx, conn); err == nil {
		t.Fatal("b took a's server for its own")
	}
}
