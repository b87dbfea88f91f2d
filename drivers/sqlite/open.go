package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// MemoryPath is the path that opens a database private to one Driver.
const MemoryPath = ":memory:"

// openTimeout bounds the work of Open (journal mode, integrity check, schema)
// while other processes keep the new file busy.
const openTimeout = 30 * time.Second

var (
	registerOnce sync.Once
	errRegister  error
)

// registerFunctions makes holderGoneFunc and noteTokenFunc available to the
// connections modernc opens from now on. Registration is process-wide, hence
// once.
func registerFunctions() error {
	registerOnce.Do(func() {
		errRegister = sqlite.RegisterScalarFunction(holderGoneFunc, 2,
			func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
				pid, ok1 := args[0].(int64)
				start, ok2 := args[1].(int64)
				if ok1 && ok2 && holderGone(pid, start) {
					return int64(1), nil
				}
				return int64(0), nil
			})
		if errRegister == nil {
			errRegister = sqlite.RegisterScalarFunction(noteTokenFunc, 2,
				func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
					return noteToken(args)
				})
		}
	})
	return errRegister
}

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
	// process's write lock instead of failing at once. In WAL mode,
	// synchronous=NORMAL still keeps the database consistent after a crash;
	// a power loss may forget the last commits, which for locks means
	// forgetting acquisitions whose holders died with the host anyway.
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
	d := &Driver{path: path, db: db, self: currentProcess()}
	if err := d.initialise(ctx, memory); err != nil {
		// The initialisation error is the one worth reporting.
		d.closeStatements()
		_ = db.Close()
		return nil, err
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

// initialise checks a file database's integrity, switches it to WAL, creates
// the lock table if needed and prepares the statements.
func (d *Driver) initialise(ctx context.Context, memory bool) error {
	// The first connection opens (or creates) the file: report failing to
	// do so as such, not as a failure of the first query.
	var r busyRetry
	for {
		err := d.db.PingContext(ctx)
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return fmt.Errorf("cannot open or create the database: %w", err)
			}
			break
		}
	}
	if !memory {
		// The check only reads, so a file it rejects is left as it was.
		if err := d.quickCheck(ctx); err != nil {
			return err
		}
		if err := d.useWAL(ctx); err != nil {
			return err
		}
	}
	if err := d.createSchema(ctx); err != nil {
		return err
	}
	return d.prepare(ctx)
}

// useWAL turns on write-ahead logging, which lets readers work while a
// writer commits and makes a commit one append to the log. The mode is
// stored in the file, so only the first opener changes anything.
func (d *Driver) useWAL(ctx context.Context) error {
	var r busyRetry
	for {
		var mode string
		err := d.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return fmt.Errorf("set WAL journal mode: %w", err)
			}
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal mode is %q, not WAL (the file system may not support the shared memory WAL needs)", mode)
			}
			return nil
		}
	}
}

// quickCheck runs SQLite's quick integrity check, which reads every page
// once: a lock database is small, and a damaged one should fail at Open
// rather than on some later acquire.
func (d *Driver) quickCheck(ctx context.Context) error {
	var r busyRetry
	for {
		problems, err := quickCheckOnce(ctx, d.db)
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return fmt.Errorf("integrity check: %w", err)
			}
			if len(problems) > 0 {
				return fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
			}
			return nil
		}
	}
}

// quickCheckOnce returns the first few problems PRAGMA quick_check reports;
// none when it says "ok".
func quickCheckOnce(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(4)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		if line != "ok" {
			problems = append(problems, strings.ReplaceAll(line, "\n", "; "))
		}
	}
	return problems, rows.Err()
}

// createSchema creates the lock table inside an immediate transaction, so
// that processes opening a new file together take turns: each waits for the
// write lock, and all but the first find the table there.
func (d *Driver) createSchema(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var r busyRetry
	for {
		err := createIn(ctx, conn)
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
			return nil
		}
	}
}

// createIn runs one attempt of createSchema on conn.
func createIn(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, createTable); err != nil {
		// Rolling back with a fresh context: the transaction must end even
		// when ctx is the reason it failed.
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	return nil
}

// prepare compiles the statements every operation uses. Preparing also checks
// that an existing zerotal_lock table has the columns they need.
func (d *Driver) prepare(ctx context.Context) error {
	for _, s := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&d.acquireStmt, acquireSQL(d.self)},
		{&d.releaseStmt, sqlRelease},
		{&d.extendStmt, sqlExtend},
		{&d.forceStmt, sqlForceRelease},
		{&d.existsStmt, sqlExists},
		{&d.inspectStmt, sqlInspect},
	} {
		var r busyRetry
		for {
			stmt, err := d.db.PrepareContext(ctx, s.sql)
			if again, err := r.again(ctx, err); !again {
				if err != nil {
					return fmt.Errorf("prepare statements (is zerotal_lock a table of another program?): %w", err)
				}
				*s.stmt = stmt
				break
			}
		}
	}
	return nil
}
