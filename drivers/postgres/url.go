package postgres

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/driver"

	"github.com/jackc/pgx/v5/pgxpool"
)

// errBadURL is wrapped by every error Open and OpenURL return for a URL
// they cannot use: driver.ErrBadURL, which the engine reports as an
// invalid argument. Those errors name the bad part and never contain the
// password.
var errBadURL = fmt.Errorf("postgres: %w", driver.ErrBadURL)

// The query parameters of this driver, taken out of the URL before pgx sees
// it.
const (
	// paramTable names the lock table, "schema.table" (see [WithTable]).
	paramTable = "lock_table"
	// paramWaitPoll is a Go duration (see [WithWaitPoll]).
	paramWaitPoll = "lock_wait_poll"
)

// urlForm is the shape of a URL Open accepts, for error messages.
const urlForm = "postgres://[user[:password]@]host[:port][,host2[:port2]...][/database][?param=value&...], or postgresql://…"

// pgxParams are the query parameters passed on to pgx: libpq's connection
// parameters that pgx understands, pgx's and pgxpool's own, and the two
// session settings libpq defines (application_name, options). pgx would
// send any other parameter to the server as a runtime setting, so a typo
// would become a failed connection much later, or a setting nobody meant:
// Open refuses it instead.
var pgxParams = []string{
	// libpq connection parameters
	"host", "port", "dbname", "database", "user", "password", "passfile",
	"connect_timeout", "sslmode", "ssl", "sslkey", "sslcert", "sslcertmode", "sslrootcert",
	"sslnegotiation", "sslpassword", "sslsni", "krbspn", "krbsrvname", "target_session_attrs",
	"service", "servicefile", "min_protocol_version", "max_protocol_version",
	"channel_binding", "require_auth", "application_name", "options",
	// pgx
	"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode",
	// pgxpool
	"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_idle_time", "pool_health_check_period", "pool_max_conn_lifetime_jitter",
	"pool_ping_timeout",
}

// Open connects to the PostgreSQL server that rawURL names, in the URL form
// of libpq and pgx: postgres://user:password@host:port/database?sslmode=…
// (postgresql:// too). Besides the parameters pgx accepts, lock_table
// names the lock table ("schema.table", default [DefaultTable]) and
// lock_wait_poll how often a waiter polls (a Go duration, default
// [DefaultWaitPoll]); any other parameter is refused. opts are applied
// after the URL's parameters.
//
// Open does not contact the server: an unreachable server makes the first
// call fail, and the first call creates the lock table if it is missing.
// Close closes the pool Open made.
func Open(rawURL string, opts ...Option) (*Driver, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("%w: the URL is empty; want %s", errBadURL, urlForm)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's errors quote the whole URL, password included.
		return nil, fmt.Errorf("%w: cannot parse it as a URL (%s); want %s", errBadURL, driver.URLProblem(err), urlForm)
	}
	return openURL(u, opts)
}

// OpenURL is Open for a URL already parsed, the form a driver registry
// passes.
func OpenURL(u *url.URL) (*Driver, error) { return openURL(u, nil) }

func openURL(u *url.URL, opts []Option) (*Driver, error) {
	cfg, urlOpts, err := poolConfig(u)
	if err != nil {
		return nil, err
	}
	// NewWithConfig connects lazily: no connection is made before the
	// first call needs one.
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errBadURL, scrub(err.Error(), u))
	}
	d := New(pool, append(urlOpts, opts...)...)
	d.ownsPool = true
	return d, nil
}

// poolConfig turns u into a pgxpool configuration and the options its
// lock_ parameters set.
func poolConfig(u *url.URL) (*pgxpool.Config, []Option, error) {
	if u == nil {
		return nil, nil, fmt.Errorf("%w: nil URL; want %s", errBadURL, urlForm)
	}
	if u.Opaque != "" || u.Scheme == "" {
		// Without "//" there is no userinfo to redact: show nothing.
		return nil, nil, fmt.Errorf("%w: no scheme followed by \"//\"; want %s", errBadURL, urlForm)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, nil, fmt.Errorf("%w: unsupported scheme %q; want %s", errBadURL, u.Scheme, urlForm)
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// ParseQuery's errors quote the query, which may hold a password.
		return nil, nil, fmt.Errorf("%w: the query string is malformed (an invalid %%-escape or a ';')", errBadURL)
	}
	var opts []Option
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	slices.Sort(names) // report the first bad parameter in a stable order
	for _, name := range names {
		values := query[name]
		switch {
		case name == paramTable:
			if len(values) != 1 {
				return nil, nil, fmt.Errorf("%w: %s is given %d times", errBadURL, name, len(values))
			}
			if _, err := parseTable(values[0]); err != nil {
				return nil, nil, fmt.Errorf("%w: %s: %w", errBadURL, name, err)
			}
			opts = append(opts, WithTable(values[0]))
			query.Del(name)
		case name == paramWaitPoll:
			if len(values) != 1 {
				return nil, nil, fmt.Errorf("%w: %s is given %d times", errBadURL, name, len(values))
			}
			poll, err := time.ParseDuration(values[0])
			if err != nil || poll < time.Millisecond || poll > time.Minute {
				return nil, nil, fmt.Errorf("%w: %s=%q: want a duration from 1ms to 1m, such as 250ms", errBadURL, name, values[0])
			}
			opts = append(opts, WithWaitPoll(poll))
			query.Del(name)
		case !slices.Contains(pgxParams, name):
			return nil, nil, fmt.Errorf("%w: unknown query parameter %q; this driver takes %s and %s, and pgx's connection parameters (%s)",
				errBadURL, scrub(name, u), paramTable, paramWaitPoll, strings.Join(pgxParams, ", "))
		}
	}
	stripped := *u
	stripped.RawQuery = query.Encode()
	cfg, err := pgxpool.ParseConfig(stripped.String())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", errBadURL, scrub(err.Error(), u))
	}
	rp := cfg.ConnConfig.RuntimeParams
	// An acquisition the driver reports must survive a crash of the
	// server, and the driver's functions rely on READ COMMITTED (each
	// statement sees what committed before it). Both are PostgreSQL's
	// defaults; a server or role configured otherwise is overridden for
	// the driver's sessions only. "options" (-c …) can still override.
	if _, set := rp["synchronous_commit"]; !set {
		rp["synchronous_commit"] = "on"
	}
	if _, set := rp["default_transaction_isolation"]; !set {
		rp["default_transaction_isolation"] = "read committed"
	}
	return cfg, opts, nil
}

// scrub removes every password u carries (in its userinfo or as a
// password= parameter), in every spelling it may have, from msg.
func scrub(msg string, u *url.URL) string {
	var secrets []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			secrets = append(secrets, u.User.String(), p)
		}
	}
	if q, err := url.ParseQuery(u.RawQuery); err == nil {
		for _, p := range q["password"] {
			if p != "" {
				secrets = append(secrets, p)
			}
		}
	} else if u.RawQuery != "" {
		// A query that does not parse may still hold a password.
		secrets = append(secrets, u.RawQuery)
	}
	for _, s := range secrets {
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			if form != "" {
				msg = strings.ReplaceAll(msg, form, "xxxxx")
			}
		}
	}
	return msg
}
