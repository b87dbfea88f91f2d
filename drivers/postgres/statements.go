package postgres

import "strings"

// takeFree is the common case of an acquire: the key is free (its holder
// released it, or its TTL passed) and nobody queues for it. It updates the
// row in place, with the token max(last + 1, server clock in µs), and
// returns the token. Run as a plain statement, not inside a function, it
// costs little more than the bare upsert of a minimal lease table. The
// clock is read once, so that the expiry is exactly the TTL after the
// acquisition; if the UPDATE waits for the row's lock, that reading is from
// before the wait, which can only make the lease end earlier.
const takeFree = `UPDATE {locks} l SET owner = $2::text,
	token = greatest(l.token + 1, (extract(epoch FROM c.now) * 1000000)::bigint),
	acquired_at = c.now, expires_at = c.now + $3::bigint * interval '1 microsecond',
	pid = $4::integer, host = $5::text
FROM (SELECT clock_timestamp() AS now) c
WHERE l.key = $1::text AND l.expires_at <= c.now AND NOT l.queued
RETURNING l.token`

// The acquire, wait and release statements try their common case first and
// call the function that handles every case only when it did not apply.
// The function runs in the same statement, so each is one round trip; its
// own statements see what committed before each of them began (READ
// COMMITTED), and it locks the key's row before it decides.
const (
	acquireSQL = `WITH fast AS (` + takeFree + `)
SELECT coalesce((SELECT token FROM fast), {acquire}($1, $2, $3, $4, $5))`

	waitSQL = `WITH fast AS (` + takeFree + `)
SELECT token, 0::bigint, false FROM fast
UNION ALL
SELECT w.o_token, w.o_remaining_us, w.o_first FROM {wait}($1, $2, $3, $4, $5, $6::text, $7::integer, $8::timestamptz, $9::bigint) w
WHERE NOT EXISTS (SELECT FROM fast)`

	// releaseSQL's common case: owner holds the key and nobody queues.
	// The row stays, marked free by an expiry of now.
	releaseSQL = `WITH fast AS (
	UPDATE {locks} l SET owner = '', expires_at = clock_timestamp(), pid = 0, host = ''
	WHERE l.key = $1::text AND l.owner = $2::text AND l.expires_at > clock_timestamp() AND NOT l.queued
	RETURNING true AS released)
SELECT coalesce((SELECT released FROM fast), {release}($1, $2))`
)

// schemaObjects are the objects schemaDDL names {x}, each "<table>_x".
var schemaObjects = []string{"waiters", "micros", "handoff", "lockrow", "acquire", "wait", "release", "force_release", "leave"}

// statements are the SQL texts of a Driver's operations, with its table's
// names filled in.
type statements struct {
	ddl          string // schemaDDL
	versionCheck string // reads the lock table's comment
	acquire      string
	wait         string
	release      string
	extend       string
	forceRelease string
	leave        string
	exists       string
	inspect      string
}

// newStatements fills in the statements for the lock table t (validated,
// see parseTable).
func newStatements(t table) statements {
	pairs := []string{"{locks}", t.quoted(), "{waiters_order_name}", quoteIdent(t.name + "_waiters_order")}
	for _, o := range schemaObjects {
		pairs = append(pairs, "{"+o+"}", t.object(o))
	}
	r := strings.NewReplacer(pairs...)
	return statements{
		ddl:          r.Replace(schemaDDL),
		versionCheck: `SELECT coalesce(obj_description(to_regclass($1), 'pg_class'), '')`,
		acquire:      r.Replace(acquireSQL),
		wait:         r.Replace(waitSQL),
		release:      r.Replace(releaseSQL),
		forceRelease: r.Replace(`SELECT {force_release}($1)`),
		leave:        r.Replace(`SELECT {leave}($1, $2)`),
		// Extend, Exists and Inspect touch one row and no queue: plain
		// statements, with no function to call.
		extend: r.Replace(`UPDATE {locks} SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
WHERE key = $1 AND owner = $2 AND expires_at > clock_timestamp()`),
		exists: r.Replace(`SELECT EXISTS (SELECT FROM {locks} WHERE key = $1 AND expires_at > clock_timestamp())`),
		inspect: r.Replace(`SELECT owner, token, acquired_at, expires_at, pid, host FROM {locks}
WHERE key = $1 AND expires_at > clock_timestamp()`),
	}
}
