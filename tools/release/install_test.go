package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallFromOutside proves that users can install and use the modules
// with the ordinary go commands, as if the release were published: a proxy
// made from the tree serves the modules at VERSION, and a go command with no
// workspace, a fresh GOPATH and module cache, and -mod=mod (third-party
// modules from the usual proxies, through the local module cache first)
//
//   - installs lockctl with go install ...@VERSION, which the go command
//     refuses for a module with replace directives, and runs it;
//   - builds and runs a program on package lock and the memory driver alone,
//     whose binary links neither go-redis nor SQLite;
//   - builds a program on the Redis driver, opened by URL;
//   - passes the conformance kit with a driver of its own.
func TestInstallFromOutside(t *testing.T) {
	r, err := loadRepo("../..")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := writeProxy(r, proxy); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := append(isolatedEnv(proxy, home), "GOBIN="+filepath.Join(home, "bin"))
	goCmd := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { cleanModcache(env, home) }) // its files are read-only

	t.Run("go install lockctl", func(t *testing.T) {
		goCmd(home, "install", "github.com/zerotal/lock/tools/lockctl@"+r.version)
		lockctl := filepath.Join(home, "bin", "lockctl")
		out, err := exec.Command(lockctl, "version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), r.version) {
			t.Fatalf("lockctl version = %q, %v; want it to name %s", out, err, r.version)
		}
		cmd := exec.Command(lockctl, "run", "--sqlite-path", filepath.Join(home, "locks.db"), "--key", "job", "--", "echo", "ran")
		if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ran" {
			t.Fatalf("lockctl run = %q, %v", out, err)
		}
	})

	t.Run("memory only", func(t *testing.T) {
		dir := newModule(t, "example.com/app", map[string]string{"main.go": memoryProgram})
		goCmd(dir, "get", "github.com/zerotal/lock/sdk/go@"+r.version)
		goCmd(dir, "mod", "tidy")
		bin := filepath.Join(dir, "app")
		goCmd(dir, "build", "-o", bin, ".")
		if out, err := exec.Command(bin).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("the program said %q, %v", out, err)
		}
		linked := goCmd(dir, "version", "-m", bin)
		for _, heavy := range []string{"github.com/redis/go-redis", "modernc.org/sqlite", "github.com/jackc/pgx", "go.etcd.io/etcd"} {
			if strings.Contains(linked, heavy) {
				t.Errorf("a program on the memory driver links %s:\n%s", heavy, linked)
			}
		}
		gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		if strings.Contains(string(gomod), "drivers/redis") || strings.Contains(string(gomod), "drivers/sqlite") {
			t.Errorf("go mod tidy put other drivers into the program's go.mod:\n%s", gomod)
		}
	})

	t.Run("redis driver", func(t *testing.T) {
		dir := newModule(t, "example.com/redisapp", map[string]string{"main.go": redisProgram})
		goCmd(dir, "get", "github.com/zerotal/lock/sdk/go@"+r.version, "github.com/zerotal/lock/drivers/redis@"+r.version)
		goCmd(dir, "mod", "tidy")
		goCmd(dir, "build", "-o", filepath.Join(dir, "app"), ".")
	})

	t.Run("conformance kit", func(t *testing.T) {
		dir := newModule(t, "example.com/mydriver", map[string]string{"driver.go": ownDriver, "driver_test.go": ownDriverTest})
		goCmd(dir, "get", "github.com/zerotal/lock/driver@"+r.version, "github.com/zerotal/lock/conformance@"+r.version)
		goCmd(dir, "mod", "tidy")
		goCmd(dir, "test", "-count=1", ".")
	})
}

// newModule writes a module of its own into a fresh directory.
func newModule(t *testing.T, path string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module " + path + "\n\ngo 1.26\n"
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const memoryProgram = `package main

import (
	"context"
	"fmt"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

func main() {
	err := lock.Try(context.Background(), lock.Key("invoice", 7), time.Minute, func(ctx context.Context) error {
		l, _ := lock.FromContext(ctx)
		if l.Token() == 0 {
			return fmt.Errorf("no fencing token")
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ok")
}
`

const redisProgram = `package main

import (
	"fmt"

	_ "github.com/zerotal/lock/drivers/redis"
	lock "github.com/zerotal/lock/sdk/go"
)

func main() {
	m, err := lock.Open(lock.Config{URL: "redis://127.0.0.1:6379/0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	fmt.Println("opened")
}
`

// ownDriver is a third party's driver: locks in a map, in one process.
const ownDriver = `// Package mydriver is a small in-process lock driver.
package mydriver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
)

type entry struct {
	owner   string
	expires time.Time
}

// Table is where the locks of every Driver made by Open live.
type Table struct {
	mu    sync.Mutex
	locks map[string]entry
}

// Driver is one handle on a Table.
type Driver struct {
	t      *Table
	closed bool
}

var _ driver.Driver = (*Driver)(nil)

// NewTable returns an empty table.
func NewTable() *Table { return &Table{locks: map[string]entry{}} }

// Open returns a driver on t.
func (t *Table) Open() *Driver { return &Driver{t: t} }

func (d *Driver) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.t.mu.Lock()
	if d.closed {
		d.t.mu.Unlock()
		return errors.New("mydriver: closed")
	}
	return nil
}

func (d *Driver) live(key string) (entry, bool) {
	e, ok := d.t.locks[key]
	return e, ok && time.Now().Before(e.expires)
}

func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.begin(ctx); err != nil {
		return false, err
	}
	defer d.t.mu.Unlock()
	if e, ok := d.live(key); ok && e.owner != owner {
		return false, nil
	}
	d.t.locks[key] = entry{owner, time.Now().Add(ttl)}
	return true, nil
}

func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.begin(ctx); err != nil {
		return false, err
	}
	defer d.t.mu.Unlock()
	if e, ok := d.live(key); !ok || e.owner != owner {
		return false, nil
	}
	delete(d.t.locks, key)
	return true, nil
}

func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.begin(ctx); err != nil {
		return err
	}
	defer d.t.mu.Unlock()
	delete(d.t.locks, key)
	return nil
}

func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.begin(ctx); err != nil {
		return false, err
	}
	defer d.t.mu.Unlock()
	_, ok := d.live(key)
	return ok, nil
}

func (d *Driver) Close() error {
	d.t.mu.Lock()
	defer d.t.mu.Unlock()
	d.closed = true
	return nil
}
`

const ownDriverTest = `package mydriver

import (
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

func TestConformance(t *testing.T) {
	table := NewTable()
	conformance.Run(t, conformance.Harness{New: func(t testing.TB) driver.Driver {
		d := table.Open()
		t.Cleanup(func() { d.Close() })
		return d
	}})
}
`
