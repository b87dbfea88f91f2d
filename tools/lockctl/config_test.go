package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lock "github.com/zerotal/lock/sdk/go"
)

// envOf returns a getenv over vars.
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestResolveBackend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flags     backendFlags
		env       map[string]string
		want      lock.Config
		createDir string
	}{
		{
			name:      "default: sqlite in the XDG state directory",
			env:       map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"},
			want:      lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "/state/zerotal-lock/locks.db"}},
			createDir: "/state/zerotal-lock",
		},
		{
			name:      "default without XDG_STATE_HOME: ~/.local/state",
			env:       map[string]string{"HOME": "/home/u"},
			want:      lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "/home/u/.local/state/zerotal-lock/locks.db"}},
			createDir: "/home/u/.local/state/zerotal-lock",
		},
		{
			name:      "a relative XDG_STATE_HOME is ignored, as the spec says",
			env:       map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/u"},
			want:      lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "/home/u/.local/state/zerotal-lock/locks.db"}},
			createDir: "/home/u/.local/state/zerotal-lock",
		},
		{
			name: "environment",
			env:  map[string]string{"LOCK_DRIVER": "sqlite", "LOCK_SQLITE_PATH": "/env.db", "LOCK_PREFIX": "env:"},
			want: lock.Config{Driver: "sqlite", Prefix: "env:", SQLite: lock.SQLiteConfig{Path: "/env.db"}},
		},
		{
			name:  "flags win over the environment",
			flags: backendFlags{sqlitePath: "/flag.db", prefix: "flag:"},
			env:   map[string]string{"LOCK_SQLITE_PATH": "/env.db", "LOCK_PREFIX": "env:"},
			want:  lock.Config{Driver: "sqlite", Prefix: "flag:", SQLite: lock.SQLiteConfig{Path: "/flag.db"}},
		},
		{
			name:  "--driver wins over LOCK_DRIVER",
			flags: backendFlags{driver: "file", dir: "/locks"},
			env:   map[string]string{"LOCK_DRIVER": "redis", "REDIS_URL": "redis://env"},
			want:  lock.Config{Driver: "file", File: lock.FileConfig{Dir: "/locks"}},
		},
		{
			name: "redis from the environment",
			env:  map[string]string{"LOCK_DRIVER": "redis", "REDIS_URL": "redis://env:6379/1"},
			want: lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "redis://env:6379/1"}},
		},
		{
			name:  "--redis-url wins over REDIS_URL",
			flags: backendFlags{driver: "redis", redisURL: "redis://flag"},
			env:   map[string]string{"REDIS_URL": "redis://env"},
			want:  lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "redis://flag"}},
		},
		{
			name: "file from the environment",
			env:  map[string]string{"LOCK_DRIVER": "file", "LOCK_FILE_DIR": "/env-locks"},
			want: lock.Config{Driver: "file", File: lock.FileConfig{Dir: "/env-locks"}},
		},
		{
			name:  "another driver's variable is ignored",
			flags: backendFlags{driver: "sqlite", sqlitePath: "/x.db"},
			env:   map[string]string{"REDIS_URL": "redis://env", "LOCK_FILE_DIR": "/d"},
			want:  lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "/x.db"}},
		},
		{
			name:  "--url names the driver by its scheme",
			flags: backendFlags{url: "postgres://db.internal/locks?table=leases", prefix: "p:"},
			want:  lock.Config{URL: "postgres://db.internal/locks?table=leases", Driver: "postgres", Prefix: "p:"},
		},
		{
			name: "LOCK_URL wins over LOCK_DRIVER and the driver's variables",
			env:  map[string]string{"LOCK_URL": "redis+cluster://a:7000?addr=b:7001", "LOCK_DRIVER": "sqlite", "LOCK_SQLITE_PATH": "/env.db"},
			want: lock.Config{URL: "redis+cluster://a:7000?addr=b:7001", Driver: "redis"},
		},
		{
			name:  "--url wins over LOCK_URL",
			flags: backendFlags{url: "etcd://127.0.0.1:23790"},
			env:   map[string]string{"LOCK_URL": "redis://env"},
			want:  lock.Config{URL: "etcd://127.0.0.1:23790", Driver: "etcd"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be, err := tc.flags.resolve("run", envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if be.cfg != tc.want || be.createDir != tc.createDir {
				t.Errorf("got %+v (create %q), want %+v (create %q)", be.cfg, be.createDir, tc.want, tc.createDir)
			}
		})
	}
}

func TestResolveBackendErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags backendFlags
		env   map[string]string
		code  int
		want  string
	}{
		{"unknown driver", backendFlags{driver: "zookeeper"}, nil, exitConfig, `unknown driver "zookeeper"`},
		{"unknown driver from the environment", backendFlags{}, map[string]string{"LOCK_DRIVER": "etcd"}, exitConfig, `"etcd"`},
		{"memory", backendFlags{driver: "memory"}, nil, exitConfig, "inside one process"},
		{"sqlite :memory:", backendFlags{sqlitePath: ":memory:"}, nil, exitConfig, "inside one process"},
		{"no home", backendFlags{}, nil, exitConfig, "no state directory"},
		{"redis without URL", backendFlags{driver: "redis"}, nil, exitConfig, "REDIS_URL"},
		{"file without dir", backendFlags{driver: "file"}, nil, exitConfig, "LOCK_FILE_DIR"},
		{"--dir with sqlite", backendFlags{dir: "/d"}, map[string]string{"HOME": "/h"}, exitUsage, "--dir is for the file driver"},
		{"--redis-url with file", backendFlags{driver: "file", redisURL: "redis://x"}, nil, exitUsage, "--redis-url is for the redis driver"},
		{"--sqlite-path with redis", backendFlags{sqlitePath: "/x.db"}, map[string]string{"LOCK_DRIVER": "redis"}, exitUsage, "add --driver sqlite"},
		{"--url and --driver", backendFlags{url: "redis://x", driver: "redis"}, nil, exitUsage, "--driver and the backend URL"},
		{"LOCK_URL and --dir", backendFlags{dir: "/d"}, map[string]string{"LOCK_URL": "file:///d"}, exitUsage, "--dir and the backend URL"},
		{"--url of the memory driver", backendFlags{url: "memory:"}, nil, exitConfig, "inside one process"},
		{"--url with an unknown scheme", backendFlags{url: "zk://host"}, nil, exitConfig, `no driver for the scheme "zk"`},
		{"--url that is not a URL", backendFlags{url: "redis://u:pw@h:port"}, nil, exitConfig, "invalid port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.flags.resolve("run", envOf(tc.env))
			var e *exitError
			if !errors.As(err, &e) || e.code != tc.code || !strings.Contains(e.msg, tc.want) {
				t.Errorf("got %v, want exit %d with %q", err, tc.code, tc.want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		name         string
		args         []string
		interspersed bool
		json         bool
		positional   []string
	}{
		{"flags first", []string{"--json", "a", "b"}, true, true, []string{"a", "b"}},
		{"flags after keys", []string{"a", "--json", "b"}, true, true, []string{"a", "b"}},
		{"-- ends flags", []string{"a", "--", "--json"}, true, false, []string{"a", "--json"}},
		{"not interspersed: the command keeps its flags", []string{"--json", "ls", "--json"}, false, true, []string{"ls", "--json"}},
		{"not interspersed, with --", []string{"--", "ls", "-l"}, false, false, []string{"ls", "-l"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("test")
			asJSON := fs.Bool("json", false, "")
			got, err := parseArgs(nil, fs, "", tc.args, tc.interspersed)
			if err != nil {
				t.Fatal(err)
			}
			if *asJSON != tc.json || strings.Join(got, " ") != strings.Join(tc.positional, " ") {
				t.Errorf("json=%v positional=%q, want json=%v positional=%q", *asJSON, got, tc.json, tc.positional)
			}
		})
	}
}

// The default state directory and database must be this user's alone.
func TestStateDirectoryOthersCanWriteIsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		dir    os.FileMode
		db     os.FileMode
		reason string
	}{
		{"directory open to all", 0o777, 0, "others can write"},
		{"database open to all", 0o700, 0o666, "others can write"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			dir := filepath.Join(h.dir, "state", "zerotal-lock")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, c.dir); err != nil {
				t.Fatal(err)
			}
			if c.db != 0 {
				if err := os.WriteFile(filepath.Join(dir, "locks.db"), nil, c.db); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(dir, "locks.db"), c.db); err != nil {
					t.Fatal(err)
				}
			}
			// The default path, not the harness's LOCK_SQLITE_PATH.
			r := h.runWith(startOptions{env: []string{"LOCK_SQLITE_PATH="}}, "run", "--key", "k", "--", "true")
			if r.code != exitConfig || !strings.Contains(r.stderr, c.reason) {
				t.Fatalf("exit %d, stderr %q; want %d saying %q", r.code, r.stderr, exitConfig, c.reason)
			}
		})
	}
}
