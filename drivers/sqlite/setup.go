package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

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

// createSchema creates the lock and epoch tables inside an immediate transaction, so
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
	for _, create := range []string{createTable, createEpochTable} {
		if _, err := conn.ExecContext(ctx, create); err != nil {
			// Rolling back with a fresh context: the transaction must end
			// even when ctx is the reason it failed.
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			return err
		}
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
