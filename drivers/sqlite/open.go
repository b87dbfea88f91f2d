package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zerotal/lock/driver/process"
)

// MemoryPath is the path that opens a database private to one Driver.
const MemoryPath = ":memory:"

// openTimeout bounds the work of Open (journal mode, integrity check, schema)
// while other processes keep the new file busy.
const openTimeout = 30 * time.Second

// Open opens (creating it if needed) the lock database at path, or a private
// in-memory database for ":memory:". Every process of the host that opens the
// same file shares its locks.
//
// Open fails, naming path, when the database cannot be used: path is a
// directory or not a regular file, its parent directory does not exist or
// does not accept new files, the file is not a SQLite database or fails
// SQLite's quick integrity check, or it holds a zerotal_lock table of another
// shape. Creating the table is idempotent and safe when many processes open a
// new file at the same time.
func Open(path string) (*Driver, error) {
	if err := registerFunctions(); err != nil {
		return nil, fmt.Errorf("sqlite lock driver: register SQL function: %w", err)
	}
	d, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite lock driver: open %q: %w", path, err)
	}
	return d, nil
}

func open(path string) (*Driver, error) {
	if path == "" {
		return nil, errors.New(`empty path (use ":memory:" for a private database)`)
	}
	memory := path == MemoryPath
	// busy_timeout comes first so that the statements below wait out another
	// process's write lock instead of failing at once. synchronous=NORMAL
	// does not sync the write-ahead log on every commit; epoch.go says why
	// that loses no fencing guarantee and what a power loss can forget.
	query := "_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMS) + ")&_pragma=synchronous(NORMAL)"
	dsn := MemoryPath + "?" + query
	hubKey := ""
	if !memory {
		abs, err := checkPath(path)
		if err != nil {
			return nil, err
		}
		dsn = (&url.URL{Scheme: "file", Path: abs, RawQuery: query}).String()
		hubKey = abs
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// One connection per Driver: a private in-memory database exists only
	// inside its connection, and for a file, SQLite admits one writer at a
	// time anyway, so a queue in database/sql is cheaper than connections of
	// one process fighting for the write lock through busy waits.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	d := &Driver{path: path, db: db, self: process.Self()}
	d.life, d.endLife = context.WithCancel(context.Background())
	if err := d.initialise(ctx, memory); err != nil {
		// The initialisation error is the one worth reporting.
		d.endLife()
		d.closeStatements()
		_ = db.Close()
		return nil, typed(err)
	}
	if memory {
		d.hub = newHub()
	} else {
		// The file exists now: resolve symlinks so that two paths to one
		// file share a hub.
		if resolved, err := filepath.EvalSymlinks(hubKey); err == nil {
			hubKey = resolved
		}
		d.hub, d.hubKey = sharedHub(hubKey), hubKey
		d.waits = waitsDir(hubKey)
	}
	return d, nil
}

// checkPath returns path made absolute after checking what the file system
// can tell before SQLite tries: that path is a regular file or absent, and
// that its parent directory exists.
func checkPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && fi.IsDir():
		return "", errors.New("is a directory")
	case err == nil && !fi.Mode().IsRegular():
		return "", fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	case err == nil:
		return abs, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	dir := filepath.Dir(abs)
	di, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("parent directory: %w", err)
	}
	if !di.IsDir() {
		return "", fmt.Errorf("parent %s is not a directory", dir)
	}
	return abs, nil
}
