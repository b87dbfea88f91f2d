package sqlite

import (
	"strconv"
	"strings"

	"github.com/zerotal/lock/driver/process"
)

// The lock table keeps one row per key ever locked. A released key keeps its
// row with owner NULL, so its token counter survives release, expiry and
// restarts; that is what makes fencing tokens only increase per key.
// WITHOUT ROWID stores rows in the primary-key b-tree itself, so a lookup by
// key touches one b-tree instead of two.
const createTable = `CREATE TABLE IF NOT EXISTS zerotal_lock (
	key         TEXT    NOT NULL PRIMARY KEY,
	owner       TEXT,
	token       INTEGER NOT NULL,
	acquired_ns INTEGER NOT NULL,
	expires_ns  INTEGER NOT NULL,
	pid         INTEGER NOT NULL,
	pid_start   INTEGER NOT NULL,
	pid_scope   TEXT    NOT NULL,
	host        TEXT    NOT NULL
) WITHOUT ROWID`

// acquireSQL returns the statement that takes key when it is new, released,
// expired, held by owner already, or held by a dead local process. Column
// names on the right of SET and in WHERE are the row's values before the
// update, so the refresh condition below tells a refresh (token and
// acquisition time kept) from a takeover (the next token: one more, and at
// least the Driver's token base ?6; see epoch.go). The statement changes no
// row when the key is held.
//
// A refresh is owner taking again a row it holds, and only when the row is
// known to be of the present, not one a power loss brought back (the last
// commits forgotten, the row's owner holding a token that was followed by
// others): its token is at least this Driver's base (handed out since this
// Driver's epoch was on disk, so after any power loss this process could
// have seen), or the row was written in this boot (pid_scope names the
// boot; a power loss is a reboot). Otherwise an owner that reuses its name
// across a reboot, as a caller of the Driver may (the SDK never does),
// would get back a token below those handed out after it.
//
// Two choices make it cheaper than the obvious statement, which matters
// because an acquire+release cycle is two of these and little else:
//
//   - The new token comes back through noteTokenFunc, keyed by the call's ?5,
//     not through RETURNING: SQLite collects RETURNING rows in a temporary
//     table and database/sql then builds a result set, which together cost
//     about a fifth of the cycle. A new row needs no note: its token is ?6.
//   - p's identity (pid, start time, scope, host) is the same in every
//     acquire of this process, so it is written into the statement text,
//     once, rather than bound as four parameters on every call.
func acquireSQL(p process.Identity) string {
	const refresh = `owner IS excluded.owner AND (token >= ?6 OR (pid_scope <> '' AND pid_scope = excluded.pid_scope))`
	identity := strconv.Itoa(p.PID) + ", " + strconv.FormatUint(p.Start, 10) + ", " +
		sqlString(p.Scope) + ", " + sqlString(p.Host)
	return `INSERT INTO zerotal_lock
	(key, owner, token, acquired_ns, expires_ns, pid, pid_start, pid_scope, host)
VALUES (?1, ?2, ?6, ?3, ?4, ` + identity + `)
ON CONFLICT (key) DO UPDATE SET
	token       = ` + noteTokenFunc + `(?5, CASE WHEN ` + refresh + ` THEN token ELSE max(token + 1, ?6) END),
	acquired_ns = CASE WHEN ` + refresh + ` THEN acquired_ns ELSE excluded.acquired_ns END,
	owner       = excluded.owner,
	expires_ns  = excluded.expires_ns,
	pid         = excluded.pid,
	pid_start   = excluded.pid_start,
	pid_scope   = excluded.pid_scope,
	host        = excluded.host
WHERE owner IS NULL
	OR owner = excluded.owner
	OR expires_ns <= excluded.acquired_ns
	OR (pid_scope <> '' AND pid_scope = excluded.pid_scope AND ` + holderGoneFunc + `(pid, pid_start))`
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// sqlRelease clears the owner of a live lock held by owner, keeping the row
// and its token counter. "Live" is judged by the clock as the statement runs
// (see nowFunc).
const sqlRelease = `UPDATE zerotal_lock SET owner = NULL
WHERE key = ?1 AND owner = ?2 AND expires_ns > ` + nowFunc + `()`

// sqlExtend moves the expiry of a live lock held by owner to ?3 nanoseconds
// after the statement runs; a lapsed lock is not revived, even if nobody took
// it.
const sqlExtend = `UPDATE zerotal_lock SET expires_ns = ` + expiryFunc + `(?3)
WHERE key = ?1 AND owner = ?2 AND expires_ns > ` + nowFunc + `()`

// sqlForceRelease clears whoever holds key.
const sqlForceRelease = `UPDATE zerotal_lock SET owner = NULL
WHERE key = ?1 AND owner IS NOT NULL`

// liveHolder selects rows whose lock is held now: owned, not expired, and
// not held by a local process that has exited (such a lock is free to take,
// so it is not held). ?2 is the caller's pid scope.
const liveHolder = `key = ?1 AND owner IS NOT NULL AND expires_ns > ` + nowFunc + `()
	AND NOT (pid_scope <> '' AND pid_scope = ?2 AND ` + holderGoneFunc + `(pid, pid_start))`

// sqlExists reports whether key has a live holder.
const sqlExists = `SELECT EXISTS (SELECT 1 FROM zerotal_lock WHERE ` + liveHolder + `)`

// sqlInspect describes key's live holder.
const sqlInspect = `SELECT owner, token, acquired_ns, expires_ns, pid, host
FROM zerotal_lock WHERE ` + liveHolder
