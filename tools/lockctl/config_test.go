package main

import (
	"errors"
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
