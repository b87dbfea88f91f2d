package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	"github.com/zerotal/lock/driver"
	lock "github.com/zerotal/lock/sdk/go"
)

// The SDK's errors are built for Go programs: each layer adds its part
// (lock: open sqlite: sqlite lock driver: open "…": parent directory: stat
// …), which a program matches with errors.Is and a developer reads in a log.
// A shell user wants one line: which backend, what failed, what to do.
// lockctl builds that line here from the error's types, not its text, and
// falls back to the SDK's message only for a failure it does not know.

// where names the backend as the user configured it: "the sqlite database
// /path", "redis at host:6379". Passwords in URLs are not shown.
func (be backend) where() string {
	c := be.cfg
	if c.URL != "" {
		u, err := driver.ParseURL(c.URL)
		if err != nil {
			return c.Driver
		}
		return describeURL(c.Driver, u)
	}
	switch c.Driver {
	case "sqlite":
		return "the sqlite database " + c.SQLite.Path
	case "file":
		return "the lock directory " + c.File.Dir
	case "redis":
		if u, err := url.Parse(c.Redis.URL); err == nil {
			return describeURL("redis", u)
		}
	}
	return c.Driver
}

// describeURL names the backend of a URL by its driver and place.
func describeURL(name string, u *url.URL) string {
	switch name {
	case "sqlite":
		if p, err := driver.URLPath(u); err == nil {
			return "the sqlite database " + p
		}
	case "file":
		if p, err := driver.URLPath(u); err == nil {
			return "the lock directory " + p
		}
	}
	switch {
	case u.Host != "":
		return name + " at " + u.Host
	case u.Path != "":
		return name + " at " + u.Path // unix:///path/to/socket
	}
	return name
}

// flagOf is the flag and variable that configure the backend's place,
// for the advice at the end of a line.
func (be backend) flagOf() string {
	switch {
	case be.cfg.URL != "":
		return "--url or LOCK_URL"
	case be.cfg.Driver == "sqlite":
		return "--sqlite-path or LOCK_SQLITE_PATH"
	case be.cfg.Driver == "file":
		return "--dir or LOCK_FILE_DIR"
	case be.cfg.Driver == "redis":
		return "--redis-url or REDIS_URL"
	}
	return "--url"
}

// problem is one failure in the user's terms.
type problem struct {
	code int    // lockctl's exit status
	why  string // what went wrong, without the layers' prefixes
	hint string // what to do, or ""
}

// explain turns err, from doing what (open, inspect "k", take "k") on be,
// into the line lockctl prints. reached says whether the backend had
// answered before: a failure to reach it then is the backend's (70), not
// the configuration's (78).
func (be backend) explain(err error, what string, reached bool) error {
	var invalid *lock.InvalidArgumentError
	if errors.As(err, &invalid) { // the user's value, not the backend, is at fault
		if name, ok := configFlags[invalid.Field]; ok {
			return fail(exitConfig, "%s: %s", name, invalid.Reason)
		}
		return fail(exitUsage, "--%s: %s", flagName(invalid.Field), invalid.Reason)
	}
	p := be.diagnose(err, reached)
	msg := fmt.Sprintf("%s: cannot %s: %s", be.where(), what, p.why)
	if p.hint != "" {
		msg += "; " + p.hint
	}
	return fail(p.code, "%s", msg)
}

// diagnose finds what err is about.
func (be backend) diagnose(err error, reached bool) problem {
	unreachable := exitConfig
	if reached {
		unreachable = exitSoftware
	}
	var (
		invalid *lock.InvalidArgumentError
		pathErr *fs.PathError
		opErr   *net.OpError
		dnsErr  *net.DNSError
	)
	switch {
	case errors.As(err, &invalid):
		return problem{code: exitUsage, why: invalid.Reason, hint: "check --" + flagName(invalid.Field)}
	case readOnly(err):
		return problem{code: exitConfig, why: "the store is read-only for this user",
			hint: "lockctl writes to it to take a lock: fix its permissions (and its directory's), or give another " + be.flagOf()}
	case errors.As(err, &pathErr):
		why := pathErr.Path + ": " + errnoText(pathErr.Err)
		hint := "check the path, or give another " + be.flagOf()
		if isPermission(pathErr.Err) {
			hint = "fix its permissions, or give another " + be.flagOf()
		}
		return problem{code: exitConfig, why: why, hint: hint}
	case errors.As(err, &dnsErr):
		return problem{code: unreachable, why: "cannot resolve the host name " + dnsErr.Name, hint: "check " + be.flagOf()}
	case errors.As(err, &opErr):
		addr := ""
		if opErr.Addr != nil {
			addr = " " + opErr.Addr.String()
		}
		return problem{code: unreachable, why: "cannot connect to" + addr + ": " + errnoText(opErr.Err),
			hint: "is the server running and reachable? check " + be.flagOf()}
	case errors.Is(err, context.DeadlineExceeded):
		return problem{code: unreachable, why: "no answer in time", hint: "is the server running and reachable? check " + be.flagOf()}
	}
	return problem{code: unreachable, why: stripLayers(err.Error())}
}

// configFlags names the flags and variables behind the lock.Config fields
// that Open refuses.
var configFlags = map[string]string{
	"Config.URL":         "--url (or LOCK_URL)",
	"Config.Driver":      "--driver (or LOCK_DRIVER)",
	"Config.Prefix":      "--prefix (or LOCK_PREFIX)",
	"Config.SQLite.Path": "--sqlite-path (or LOCK_SQLITE_PATH)",
	"Config.Redis.URL":   "--redis-url (or REDIS_URL)",
	"Config.File.Dir":    "--dir (or LOCK_FILE_DIR)",
}

// flagName is lockctl's flag for a field an InvalidArgumentError names.
func flagName(field string) string {
	switch field {
	case "timeout":
		return "wait"
	case "retry_delay", "retryDelay", "retry delay":
		return "retry-delay"
	}
	return field
}

// readOnly reports a write refused because the store cannot be written: a
// read-only file system, or a permission error that names no path (the
// sqlite driver types SQLITE_READONLY so; one that names a path is told
// with it, below).
func readOnly(err error) bool {
	var pathErr *fs.PathError
	return errors.Is(err, syscall.EROFS) || (errors.Is(err, fs.ErrPermission) && !errors.As(err, &pathErr))
}

func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// errnoText is the innermost message of a system call's error: "no such
// file or directory" rather than "stat /x: no such file or directory".
func errnoText(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// layers matches the prefixes the SDK and the drivers put before a
// backend's own words: "lock: ", an operation on a key ("inspect "k": "),
// a driver's name and operation ("redis: inspect: ", "sqlite lock driver:
// ").
var layers = regexp.MustCompile(`^(lock: |[a-z ]+ "[^"]*": |(sqlite|file|redis|postgres|etcd|memory)( lock driver)?: |(open|inspect|acquire|release|refresh|extend) (sqlite|file|redis|postgres|etcd): |(open|inspect|acquire|release|refresh|extend): )`)

// stripLayers drops the SDK's and drivers' prefixes from a message lockctl
// does not know, so that what is left is the backend's own words, on one
// line.
func stripLayers(msg string) string {
	for {
		loc := layers.FindStringIndex(msg)
		if loc == nil || loc[1] == len(msg) {
			break
		}
		msg = msg[loc[1]:]
	}
	return strings.ReplaceAll(msg, "\n\t", "; ")
}
