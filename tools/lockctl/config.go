package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/zerotal/lock/driver"
	lock "github.com/zerotal/lock/sdk/go"
)

// backendFlags are the flags that choose and configure the lock backend.
// Every command that talks to a backend registers them, so that run,
// status and release given the same flags and environment meet on the
// same locks.
type backendFlags struct {
	url        string
	driver     string
	sqlitePath string
	redisURL   string
	dir        string
	prefix     string
}

// register adds the backend flags to fs.
func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.url, "url", "", "`URL` naming and configuring the backend, instead of --driver and its flags:\nsqlite:///path/locks.db, file:///dir, redis://host:6379/0, rediss://, unix:///path,\nredis+sentinel://host:26379?master_name=NAME&addr=host2:26379, redis+cluster://host:7000?addr=host2:7000,\npostgres://user@host/db, etcd://host:2379,host2:2379 (env LOCK_URL)")
	fs.StringVar(&b.driver, "driver", "", "lock `backend`: sqlite, file or redis (env LOCK_DRIVER; default sqlite)")
	fs.StringVar(&b.sqlitePath, "sqlite-path", "", "SQLite database `file` of the sqlite driver (env LOCK_SQLITE_PATH;\ndefault $XDG_STATE_HOME/zerotal-lock/locks.db, else ~/.local/state/zerotal-lock/locks.db)")
	fs.StringVar(&b.redisURL, "redis-url", "", "`URL` of the Redis server of the redis driver: redis://[user:password@]host[:port][/db],\nrediss:// for TLS, unix:///path/to/socket (env REDIS_URL)")
	fs.StringVar(&b.dir, "dir", "", "lock `directory` of the file driver, created if missing (env LOCK_FILE_DIR)")
	fs.StringVar(&b.prefix, "prefix", "", "`prefix` of every key in the backend, to keep applications apart\n(env LOCK_PREFIX; default zerotal_lock:)")
}

// backend is a resolved backend configuration.
type backend struct {
	cfg lock.Config
	// createDir is the directory to create before opening: the parent of
	// the default SQLite file, which lives in a state directory that may
	// not exist yet. A path the user gave is never created, so that a typo
	// gives an error instead of a lock database nobody else uses.
	createDir string
}

// resolve turns the flags and the environment into a backend; a flag wins
// over its environment variable. cmd names the command in usage errors.
func (b *backendFlags) resolve(cmd string, getenv func(string) string) (backend, error) {
	pick := func(flagValue, envName string) string {
		if flagValue != "" {
			return flagValue
		}
		return getenv(envName)
	}
	var be backend
	c := &be.cfg
	c.Prefix = pick(b.prefix, "LOCK_PREFIX")
	if raw := pick(b.url, "LOCK_URL"); raw != "" {
		return b.resolveURL(cmd, raw, be)
	}
	c.Driver = pick(b.driver, "LOCK_DRIVER")
	if c.Driver == "" {
		c.Driver = "sqlite"
	}

	// A flag of another driver is a mistake the user should hear about:
	// the lock would silently live somewhere else than they think.
	for _, f := range []struct{ name, value, driver string }{
		{"sqlite-path", b.sqlitePath, "sqlite"},
		{"redis-url", b.redisURL, "redis"},
		{"dir", b.dir, "file"},
	} {
		if f.value != "" && c.Driver != f.driver {
			return be, usageError(cmd, "--%s is for the %s driver, but the driver is %s; add --driver %s", f.name, f.driver, c.Driver, f.driver)
		}
	}

	switch c.Driver {
	case "sqlite":
		c.SQLite.Path = pick(b.sqlitePath, "LOCK_SQLITE_PATH")
		switch c.SQLite.Path {
		case "":
			path, err := defaultSQLitePath(getenv)
			if err != nil {
				return be, err
			}
			c.SQLite.Path, be.createDir = path, filepath.Dir(path)
		case ":memory:":
			return be, fail(exitConfig, "sqlite path %q keeps locks inside one process, so separate lockctl runs could never exclude each other; name a file", c.SQLite.Path)
		}
	case "redis":
		c.Redis.URL = pick(b.redisURL, "REDIS_URL")
		if c.Redis.URL == "" {
			return be, fail(exitConfig, "the redis driver needs a server: give --redis-url or set REDIS_URL")
		}
	case "file":
		c.File.Dir = pick(b.dir, "LOCK_FILE_DIR")
		if c.File.Dir == "" {
			return be, fail(exitConfig, "the file driver needs a lock directory: give --dir or set LOCK_FILE_DIR")
		}
	case "memory":
		return be, fail(exitConfig, "the memory driver keeps locks inside one process, so separate lockctl runs could never exclude each other; use sqlite (the default), file or redis")
	default:
		return be, fail(exitConfig, "unknown driver %q: want sqlite, file or redis, or give --url (postgres://, etcd://, redis+cluster://, redis+sentinel://)", c.Driver)
	}
	return be, nil
}

// resolveURL is resolve for a backend named by a URL, which like
// Config.URL wins over the driver's environment variables. A driver flag
// given beside it is refused: the user meant one of the two.
func (b *backendFlags) resolveURL(cmd, raw string, be backend) (backend, error) {
	for _, f := range []struct{ name, value string }{
		{"driver", b.driver}, {"sqlite-path", b.sqlitePath}, {"redis-url", b.redisURL}, {"dir", b.dir},
	} {
		if f.value != "" {
			return be, usageError(cmd, "--%s and the backend URL (--url or LOCK_URL) both name a backend; give one of them", f.name)
		}
	}
	u, err := driver.ParseURL(raw)
	if err != nil {
		return be, fail(exitConfig, "bad backend URL: %v", err)
	}
	name, ok := driver.ForScheme(u.Scheme)
	if !ok {
		return be, fail(exitConfig, "bad backend URL: lockctl has no driver for the scheme %q (it knows %s)", u.Scheme, strings.Join(driver.Schemes(), ", "))
	}
	if name == "memory" {
		return be, fail(exitConfig, "the memory driver keeps locks inside one process, so separate lockctl runs could never exclude each other; use sqlite (the default), file, redis, postgres or etcd")
	}
	be.cfg.URL, be.cfg.Driver = raw, name
	return be, nil
}

// defaultSQLitePath is the lock database used when none is named: one per
// user, in the XDG state directory, so that every lockctl the user runs on
// this host meets the others with no setup.
func defaultSQLitePath(getenv func(string) string) (string, error) {
	// The XDG spec says a relative XDG_STATE_HOME is invalid and must be
	// ignored.
	if dir := getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "zerotal-lock", "locks.db"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", fail(exitConfig, "no state directory for the default lock database ($XDG_STATE_HOME and $HOME are unset or relative): give --sqlite-path or set LOCK_SQLITE_PATH")
	}
	return filepath.Join(home, ".local", "state", "zerotal-lock", "locks.db"), nil
}

// open opens a Manager on the backend. Failures are configuration errors:
// nothing has been locked yet.
func (be backend) open() (*lock.Manager, error) {
	if be.createDir != "" {
		if err := os.MkdirAll(be.createDir, 0o700); err != nil {
			return nil, fail(exitConfig, "create the state directory for the default lock database: %v", err)
		}
		if err := checkPrivate(be.createDir, be.cfg.SQLite.Path); err != nil {
			return nil, err
		}
	}
	m, err := lock.Open(be.cfg)
	if err != nil {
		return nil, be.explain(err, "open it", false)
	}
	return m, nil
}

// checkPrivate refuses a default state directory, or a lock database in it,
// that someone else could write: with a shared HOME, another user could
// pre-create them open to all, and then free or hold this user's locks
// (force-release a running job of root's, say). Only the default location
// is checked: a path given explicitly is the user's own decision.
func checkPrivate(dir, db string) error {
	for _, path := range []string{dir, db} {
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // the database is created on first use, with our umask
		}
		if err != nil {
			return fail(exitConfig, "cannot check %s: %v", path, err)
		}
		if problem := notPrivate(fi); problem != "" {
			return fail(exitConfig, "refusing to keep locks in %s: %s, so other users could free or take your locks; fix it (chmod go-w, or remove it and let lockctl recreate it) or give --sqlite-path", path, problem)
		}
	}
	return nil
}

// failed classifies an error from a call to the backend. The first call a
// command makes is what finds out whether the backend is reachable at all
// (lock.Open does not connect to Redis), so a failure there is a
// configuration error; a later one is a failure of the backend.
func (be backend) failed(err error, first bool, what string) error {
	return be.explain(err, what, !first)
}
