package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaVersion is written as the comment of the lock table once the
// migration has created every object below; a Driver that finds it there
// knows the schema is ready without touching it (and without the CREATE
// privilege). A later driver that changes the schema bumps it.
const schemaVersion = "zerotal lock schema v1"

// migrationLockKey is the first half of the advisory lock that serialises
// migrations across processes: CREATE TABLE IF NOT EXISTS run by two
// sessions at once can fail on the catalog's unique indexes, since neither
// sees the other's uncommitted table. The second half is the hash of the
// lock table's name, so migrations of different tables do not wait on each
// other.
const migrationLockKey = 0x7a6c6b31 // "zlk1"

// schemaDDL creates the lock table, the waiters table and the functions
// that the operations call, each operation one statement. It runs in one
// transaction under the migration lock; {locks} is the quoted lock table,
// and {x} (for any other x) the quoted object "<table>_x" next to it (see
// newStatements).
//
// The lock table has one row per key ever taken, kept after a release:
//
//	owner, pid, host    the holder ('' and 0 once released)
//	token               the fencing token of the last acquisition
//	acquired_at         when it was taken, on the server's clock
//	expires_at          the key is free once clock_timestamp() reaches it;
//	                    a release sets it to the release time
//	queued              waiters may be queued: a release must look at
//	                    the queue instead of just marking the row free
//
// Rows are never deleted, because the row is what keeps the key's last
// token: every token is max(last token + 1, server clock in µs) computed
// while holding the row's lock, so tokens of one key can only increase in
// the order their acquisitions commit. A key whose row was deleted would
// take its next token from the clock alone, computed before the new row is
// committed: an acquirer that drew its value and then waited behind a
// concurrent one could commit a smaller token after a larger one, and a
// clock stepped back would hand out tokens already used. The clock half
// keeps tokens rising where the row's last token is stale: after a
// failover to a replica that had not received the last acquisitions.
//
// The waiters table is the queue of blocking acquirers, in seq order (an
// identity column: inserts for one key are serialised by the lock row's
// lock, so seq order is arrival order). A waiter is live while its deadline,
// pushed out by each of its polls, has not passed and the backend that
// listens for its Driver's notices (listener_pid, started at
// listener_start) still runs; 0 means the waiter has no listener yet. The
// backend check catches a killed process at once; the deadline catches a
// frozen one, whose connections stay open.
//
// Every function that changes a key first locks its row (UPDATE, or
// SELECT … FOR UPDATE), so all changes to one key and its queue are
// serialised, and reads the clock after that lock. The functions run as
// the caller (SECURITY INVOKER) and need READ COMMITTED, where each
// statement in them sees the rows committed before it started.
const schemaDDL = `
CREATE TABLE IF NOT EXISTS {locks} (
	key         text COLLATE "C" PRIMARY KEY,
	owner       text NOT NULL,
	token       bigint NOT NULL,
	acquired_at timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,
	pid         integer NOT NULL,
	host        text NOT NULL,
	queued      boolean NOT NULL
) WITH (fillfactor = 70);

CREATE TABLE IF NOT EXISTS {waiters} (
	key            text COLLATE "C" NOT NULL,
	owner          text NOT NULL,
	seq            bigint GENERATED ALWAYS AS IDENTITY,
	ttl_us         bigint NOT NULL,
	deadline       timestamptz NOT NULL,
	channel        text NOT NULL,
	listener_pid   integer NOT NULL,
	listener_start timestamptz,
	pid            integer NOT NULL,
	host           text NOT NULL,
	PRIMARY KEY (key, owner)
);

CREATE INDEX IF NOT EXISTS {waiters_order_name} ON {waiters} (key, seq);

-- micros is the server clock t in microseconds since 1970: the clock half
-- of a fencing token. STABLE, like extract, so that the planner inlines it.
CREATE OR REPLACE FUNCTION {micros}(t timestamptz) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT (extract(epoch FROM t) * 1000000)::bigint $$;

-- handoff grants the key, whose row the caller has locked and which is
-- free, to the first live waiter, with a token above p_prev, and notifies
-- that waiter's Driver (unless the waiter is p_caller, which learns it from
-- its own reply). Dead waiters ahead of it are dropped. A waiter whose
-- liveness only its deadline vouches for (its Driver had no listening
-- session when it queued) gets the key provisionally, until that deadline:
-- its next poll extends it to its TTL, and a waiter that died in that
-- window holds the key until its deadline, not for a whole TTL. It returns
-- the new holder and its token, or NULLs when no live waiter was queued;
-- the row's queued flag then reads false.
CREATE OR REPLACE FUNCTION {handoff}(p_key text, p_prev bigint, p_caller text,
	OUT o_owner text, OUT o_token bigint)
LANGUAGE plpgsql AS $$
DECLARE
	w      {waiters}%ROWTYPE;
	v_now  timestamptz;
	v_sure boolean;
	v_ttl  interval;
BEGIN
	LOOP
		DELETE FROM {waiters} x
		WHERE x.key = p_key AND x.seq = (SELECT min(y.seq) FROM {waiters} y WHERE y.key = p_key)
		RETURNING * INTO w;
		IF NOT FOUND THEN
			UPDATE {locks} l SET queued = false WHERE l.key = p_key;
			RETURN;
		END IF;
		v_now := clock_timestamp();
		v_ttl := w.ttl_us * interval '1 microsecond';
		v_sure := w.owner = p_caller OR (w.deadline > v_now AND w.listener_pid <> 0 AND EXISTS (
			SELECT FROM pg_stat_get_activity(w.listener_pid) a
			-- backend_start is NULL for another role's session to a role
			-- without pg_read_all_stats: the pid alone decides then.
			WHERE a.backend_start IS NULL OR w.listener_start IS NULL OR a.backend_start = w.listener_start));
		IF v_sure OR (w.deadline > v_now AND w.listener_pid = 0) THEN
			IF NOT v_sure THEN
				v_ttl := least(v_ttl, w.deadline - v_now);
			END IF;
			o_owner := w.owner;
			o_token := greatest(p_prev + 1, {micros}(v_now));
			UPDATE {locks} l SET owner = w.owner, token = o_token, acquired_at = v_now,
				expires_at = v_now + v_ttl, pid = w.pid, host = w.host,
				queued = EXISTS (SELECT FROM {waiters} x WHERE x.key = p_key)
			WHERE l.key = p_key;
			IF w.channel <> '' AND w.owner <> p_caller THEN
				PERFORM pg_notify(w.channel, o_token || ' ' || w.owner || ' ' || p_key);
			END IF;
			RETURN;
		END IF;
	END LOOP;
END $$;

-- lockrow locks the key's row FOR UPDATE and returns 0, or, when the key
-- was never used, inserts its row taken by p_owner and returns that
-- acquisition's token.
CREATE OR REPLACE FUNCTION {lockrow}(p_key text, p_owner text, p_ttl_us bigint, p_pid integer, p_host text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	v_now   timestamptz;
	v_token bigint;
BEGIN
	PERFORM FROM {locks} l WHERE l.key = p_key FOR UPDATE;
	IF FOUND THEN
		RETURN 0;
	END IF;
	v_now := clock_timestamp();
	INSERT INTO {locks} AS l VALUES (p_key, p_owner, {micros}(v_now), v_now,
		v_now + p_ttl_us * interval '1 microsecond', p_pid, p_host, false)
	ON CONFLICT (key) DO NOTHING
	RETURNING l.token INTO v_token;
	IF FOUND THEN
		RETURN v_token;
	END IF;
	-- Inserted by someone else meanwhile, and committed: this statement
	-- sees it.
	PERFORM FROM {locks} l WHERE l.key = p_key FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'zerotal lock: the row of key % vanished', p_key;
	END IF;
	RETURN 0;
END $$;

-- acquire takes the key for p_owner for p_ttl_us, or resets the TTL if
-- p_owner holds it, and returns the acquisition's token; 0 when the key is
-- held by another, or free but owed to a queued waiter (it is then handed
-- to that waiter: no barging past the queue). A contended attempt writes
-- nothing. The acquire statement has tried the common case (a free key
-- nobody queues for) before it calls this.
CREATE OR REPLACE FUNCTION {acquire}(p_key text, p_owner text, p_ttl_us bigint, p_pid integer, p_host text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	v_now   timestamptz;
	v_row   {locks}%ROWTYPE;
	v_token bigint;
BEGIN
	-- Held by another: answer without writing (no lock, no commit to
	-- flush), so that polling a held key is cheap.
	SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key;
	IF FOUND AND v_row.owner <> p_owner AND v_row.expires_at > clock_timestamp() THEN
		RETURN 0;
	END IF;
	v_token := {lockrow}(p_key, p_owner, p_ttl_us, p_pid, p_host);
	IF v_token <> 0 THEN
		RETURN v_token;
	END IF;
	SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key;
	v_now := clock_timestamp();
	IF v_row.expires_at > v_now THEN
		IF v_row.owner <> p_owner THEN
			RETURN 0;
		END IF;
		UPDATE {locks} l SET expires_at = v_now + p_ttl_us * interval '1 microsecond' WHERE l.key = p_key;
		RETURN v_row.token;
	END IF;
	IF v_row.queued AND (SELECT h.o_owner FROM {handoff}(p_key, v_row.token, '') h) IS NOT NULL THEN
		RETURN 0;
	END IF;
	v_token := greatest(v_row.token + 1, {micros}(v_now));
	UPDATE {locks} l SET owner = p_owner, token = v_token, acquired_at = v_now,
		expires_at = v_now + p_ttl_us * interval '1 microsecond', pid = p_pid, host = p_host, queued = false
	WHERE l.key = p_key;
	RETURN v_token;
END $$;

-- wait is one attempt of a queued acquire: it takes the key for p_owner if
-- it is free and no live waiter is ahead, and otherwise puts p_owner at the
-- back of the queue (or refreshes its place and its liveness). It returns
-- the token when p_owner holds the key (taken now, or handed over earlier
-- and not yet noticed, in which case its TTL starts again now), else 0 with the holder's remaining TTL in µs and
-- whether p_owner is first in line. The wait statement has tried the
-- common case (a free key nobody queues for) before it calls this.
CREATE OR REPLACE FUNCTION {wait}(p_key text, p_owner text, p_ttl_us bigint, p_pid integer, p_host text,
	p_channel text, p_listener_pid integer, p_listener_start timestamptz, p_liveness_us bigint,
	OUT o_token bigint, OUT o_remaining_us bigint, OUT o_first boolean)
LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz;
	v_row {locks}%ROWTYPE;
	v_head text;
BEGIN
	o_remaining_us := 0;
	o_first := false;
	o_token := {lockrow}(p_key, p_owner, p_ttl_us, p_pid, p_host);
	IF o_token <> 0 THEN
		RETURN;
	END IF;
	SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key;
	v_now := clock_timestamp();
	IF v_row.expires_at > v_now AND v_row.owner = p_owner THEN
		-- Handed over earlier and not noticed, perhaps provisionally:
		-- from now on it lasts the waiter's TTL.
		UPDATE {locks} l SET expires_at = v_now + p_ttl_us * interval '1 microsecond' WHERE l.key = p_key;
		o_token := v_row.token;
		RETURN;
	END IF;
	INSERT INTO {waiters} AS x (key, owner, ttl_us, deadline, channel, listener_pid, listener_start, pid, host)
	VALUES (p_key, p_owner, p_ttl_us, v_now + p_liveness_us * interval '1 microsecond', p_channel,
		p_listener_pid, p_listener_start, p_pid, p_host)
	ON CONFLICT (key, owner) DO UPDATE SET ttl_us = EXCLUDED.ttl_us, deadline = EXCLUDED.deadline,
		channel = EXCLUDED.channel, listener_pid = EXCLUDED.listener_pid, listener_start = EXCLUDED.listener_start;
	IF v_row.expires_at <= v_now THEN
		-- Free, with a queue (its holder expired): the first live
		-- waiter gets it, which may be p_owner.
		SELECT h.o_owner, h.o_token INTO v_head, o_token FROM {handoff}(p_key, v_row.token, p_owner) h;
		IF v_head = p_owner THEN
			RETURN;
		END IF;
		o_token := 0;
		SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key;
	ELSIF NOT v_row.queued THEN
		UPDATE {locks} l SET queued = true WHERE l.key = p_key;
	END IF;
	o_remaining_us := greatest({micros}(v_row.expires_at) - {micros}(clock_timestamp()), 0);
	SELECT x.owner = p_owner INTO o_first FROM {waiters} x WHERE x.key = p_key ORDER BY x.seq LIMIT 1;
	o_first := coalesce(o_first, false);
END $$;

-- release frees the key if p_owner holds it, handing it to the first live
-- waiter if any are queued, and reports whether it did. The release
-- statement has tried the common case (no queue) before it calls this.
CREATE OR REPLACE FUNCTION {release}(p_key text, p_owner text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz;
	v_row {locks}%ROWTYPE;
BEGIN
	SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key AND l.owner = p_owner FOR UPDATE;
	v_now := clock_timestamp();
	IF NOT FOUND OR v_row.expires_at <= v_now THEN
		RETURN false;
	END IF;
	IF v_row.queued AND (SELECT h.o_owner FROM {handoff}(p_key, v_row.token, '') h) IS NOT NULL THEN
		RETURN true;
	END IF;
	UPDATE {locks} l SET owner = '', expires_at = v_now, pid = 0, host = '', queued = false WHERE l.key = p_key;
	RETURN true;
END $$;

-- force_release frees the key whoever holds it, handing it to the first
-- live waiter if any are queued (also when it was already free: its holder
-- expired and nobody has handed it on yet).
CREATE OR REPLACE FUNCTION {force_release}(p_key text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz := clock_timestamp();
	v_row {locks}%ROWTYPE;
BEGIN
	UPDATE {locks} l SET owner = '', expires_at = v_now, pid = 0, host = ''
	WHERE l.key = p_key AND l.expires_at > v_now AND NOT l.queued;
	IF FOUND THEN
		RETURN;
	END IF;
	SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key FOR UPDATE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	v_now := clock_timestamp();
	IF v_row.queued AND (SELECT h.o_owner FROM {handoff}(p_key, v_row.token, '') h) IS NOT NULL THEN
		RETURN;
	END IF;
	IF v_row.expires_at > v_now THEN
		UPDATE {locks} l SET owner = '', expires_at = v_now, pid = 0, host = '', queued = false WHERE l.key = p_key;
	END IF;
END $$;

-- leave takes p_owner out of the queue when its wait ended without the
-- key. If the key was handed to it meanwhile, it passes the key on (or
-- frees it) and returns true. A free key with a queue (its holder expired)
-- goes to the next live waiter at once rather than at that waiter's next
-- poll.
CREATE OR REPLACE FUNCTION {leave}(p_key text, p_owner text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz;
	v_row {locks}%ROWTYPE;
BEGIN
	SELECT * INTO v_row FROM {locks} l WHERE l.key = p_key FOR UPDATE;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	DELETE FROM {waiters} x WHERE x.key = p_key AND x.owner = p_owner;
	v_now := clock_timestamp();
	IF v_row.expires_at > v_now AND v_row.owner <> p_owner THEN
		RETURN false;
	END IF;
	IF v_row.queued AND (SELECT h.o_owner FROM {handoff}(p_key, v_row.token, '') h) IS NOT NULL THEN
		RETURN v_row.expires_at > v_now;
	END IF;
	IF v_row.expires_at > v_now THEN
		UPDATE {locks} l SET owner = '', expires_at = v_now, pid = 0, host = '', queued = false WHERE l.key = p_key;
		RETURN true;
	END IF;
	RETURN false;
END $$;

COMMENT ON TABLE {locks} IS '` + schemaVersion + `';
`

// ensureSchema makes sure the lock table and its functions exist, creating
// them on first use. It is cheap once done: an atomic load.
func (d *Driver) ensureSchema(ctx context.Context) error {
	if d.migrated.Load() {
		return nil
	}
	d.migrateMu.Lock()
	defer d.migrateMu.Unlock()
	if d.migrated.Load() {
		return nil
	}
	if err := migrate(ctx, d.pool, d.table, d.sql); err != nil {
		return err
	}
	d.migrated.Store(true)
	return nil
}

// migrate creates the schema of t unless its version comment says it is
// there. Several processes may run it at once: they take turns on an
// advisory transaction lock, and each after the first finds the objects
// made and only replaces the functions with identical ones.
func migrate(ctx context.Context, pool *pgxpool.Pool, t table, sql statements) error {
	var comment string
	if err := pool.QueryRow(ctx, sql.versionCheck, t.quoted()).Scan(&comment); err != nil {
		return fmt.Errorf("checking the lock table %s: %w", t, err)
	}
	if comment == schemaVersion {
		return nil
	}
	if comment != "" && strings.HasPrefix(comment, "zerotal lock schema ") {
		return fmt.Errorf("the lock table %s has schema %q; this driver uses %q", t, comment, schemaVersion)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(migrationLockKey), t.String()); err != nil {
			return err
		}
		// Only a missing schema is created: CREATE SCHEMA IF NOT
		// EXISTS needs the CREATE privilege on the database even when
		// the schema exists.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, quoteIdent(t.schema)).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+quoteIdent(t.schema)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, sql.ddl)
		return err
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return fmt.Errorf("creating the lock table %s (needs CREATE on the schema, and on the database if the schema is missing; or create it once as a role that has them): %w", t, err)
		}
		return fmt.Errorf("creating the lock table %s: %w", t, err)
	}
	return nil
}
