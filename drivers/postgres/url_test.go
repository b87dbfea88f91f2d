package postgres

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

const secret = "s3cr:et@/pw"

func TestOpenAcceptsPgxURLs(t *testing.T) {
	for _, raw := range []string{
		"postgres://127.0.0.1/test",
		"postgresql://user@db.internal:5433/app?sslmode=disable",
		"postgres://user:" + url.QueryEscape(secret) + "@db.internal/app?sslmode=require&connect_timeout=3&application_name=svc",
		"postgres://a.internal:5432,b.internal:5432/app?target_session_attrs=read-write",
		"postgres://127.0.0.1/test?pool_max_conns=3&pool_min_conns=0&statement_cache_capacity=64",
		"postgres://127.0.0.1/test?options=-c%20statement_timeout%3D5s",
		"postgres://127.0.0.1/test?lock_table=app.locks&lock_wait_poll=50ms",
	} {
		d, err := Open(raw)
		if err != nil {
			t.Errorf("Open(%q): %v", raw, err)
			continue
		}
		_ = d.Close()
	}
}

func TestOpenSetsTheTableAndPoll(t *testing.T) {
	d, err := Open("postgres://127.0.0.1/test?lock_table=app.my_locks&lock_wait_poll=50ms&pool_max_conns=3")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Table() != "app.my_locks" || d.waitPoll != 50*time.Millisecond {
		t.Fatalf("table %q, poll %v; want app.my_locks, 50ms", d.Table(), d.waitPoll)
	}
	cfg := d.pool.Config()
	if cfg.MaxConns != 3 {
		t.Fatalf("pool_max_conns=3 gave MaxConns %d", cfg.MaxConns)
	}
	rp := cfg.ConnConfig.RuntimeParams
	if rp["synchronous_commit"] != "on" || rp["default_transaction_isolation"] != "read committed" {
		t.Fatalf("runtime params %v; want synchronous_commit=on and READ COMMITTED", rp)
	}
	for name := range rp {
		if strings.HasPrefix(name, "lock_") {
			t.Fatalf("%s reached pgx as a runtime parameter", name)
		}
	}
	// An option given to Open overrides the URL's.
	d2, err := Open("postgres://127.0.0.1/test?lock_wait_poll=50ms", WithWaitPoll(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.waitPoll != time.Second || d2.Table() != DefaultTable {
		t.Fatalf("poll %v, table %q; want the option's 1s and %s", d2.waitPoll, d2.Table(), DefaultTable)
	}
}

func TestOpenURLTakesAParsedURL(t *testing.T) {
	u, err := url.Parse("postgresql://127.0.0.1/test?lock_table=a.b")
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenURL(u)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Table() != "a.b" {
		t.Fatalf("table %q; want a.b", d.Table())
	}
	if _, err := OpenURL(nil); !errors.Is(err, driver.ErrBadURL) {
		t.Fatalf("OpenURL(nil): %v; want driver.ErrBadURL", err)
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	pw := url.QueryEscape(secret)
	for _, tc := range []struct {
		url  string
		want string // in the error
	}{
		{"", "empty"},
		{"mysql://user:" + pw + "@h/db", `unsupported scheme "mysql"`},
		{"postgres:opaque", `no scheme followed by "//"`},
		{"host=h user=u password=" + pw, "no scheme"},
		{"postgres://user:" + pw + "@h/db?sslmode=disable&lockk_table=x", `unknown query parameter "lockk_table"`},
		{"postgres://user:" + pw + "@h/db?search_path=x", `unknown query parameter "search_path"`},
		{"postgres://user:" + pw + "@h/db?lock_table=locks", "lock_table"},
		{"postgres://user:" + pw + "@h/db?lock_table=a.B", "lock_table"},
		{"postgres://user:" + pw + "@h/db?lock_table=a.b&lock_table=c.d", "lock_table is given 2 times"},
		{"postgres://user:" + pw + "@h/db?lock_wait_poll=fast", `lock_wait_poll="fast"`},
		{"postgres://user:" + pw + "@h/db?lock_wait_poll=1us", `lock_wait_poll="1us"`},
		{"postgres://user:" + pw + "@h/db?sslmode=bogus", "sslmode"},
		{"postgres://user:" + pw + "@h/db?pool_max_conns=zero", "pool_max_conns"},
		{"postgres://user:" + pw + "@h:99999/db", "port"},
		{"postgres://user:" + pw + "@h/db?password=" + pw + "&x=1", `unknown query parameter "x"`},
		{"postgres://h/db?password=" + pw + "&sslmode=bogus", "sslmode"},
		{"postgres://user:" + pw + "@h/db?a=%zz", "malformed"},
		{"postgres://user:%zz@h/db", "cannot parse"},
	} {
		d, err := Open(tc.url)
		if err == nil {
			_ = d.Close()
			t.Errorf("Open(%q) succeeded; want an error mentioning %q", tc.url, tc.want)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, driver.ErrBadURL) {
			t.Errorf("Open(%q): %v; want it to wrap driver.ErrBadURL", tc.url, err)
		}
		if !strings.Contains(msg, tc.want) {
			t.Errorf("Open(%q): %q; want it to mention %q", tc.url, msg, tc.want)
		}
		for _, leak := range []string{secret, pw, url.PathEscape(secret), "s3cr"} {
			if strings.Contains(msg, leak) {
				t.Errorf("Open(%q): %q contains the password", tc.url, msg)
			}
		}
	}
}

func TestParseTable(t *testing.T) {
	for _, ok := range []string{"zerotal_lock.locks", "a.b", "_s.t_1", "s." + strings.Repeat("t", maxTableName), strings.Repeat("s", maxSchemaName) + ".t"} {
		if _, err := parseTable(ok); err != nil {
			t.Errorf("parseTable(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "locks", ".t", "s.", "S.t", "s.T", "s.t-1", "s.1t", "1s.t", "s.t.u", `s."t"`, "s.t;drop", "pg_catalog.t", "s." + strings.Repeat("t", maxTableName+1), strings.Repeat("s", maxSchemaName+1) + ".t", "s.tä"} {
		if _, err := parseTable(bad); !errors.Is(err, ErrBadTable) {
			t.Errorf("parseTable(%q): %v; want ErrBadTable", bad, err)
		}
	}
}

// FuzzOpen checks that no URL makes Open panic, and that no error repeats
// the password.
//
//	go test -run '^$' -fuzz FuzzOpen -fuzztime 30s .
func FuzzOpen(f *testing.F) {
	for _, seed := range []string{
		"postgres://u:pw@h/db",
		"postgres://u:pw@h:99999/db?sslmode=verify-full",
		"postgres://u:pw@h/db?pool_max_conns=-1",
		"postgres://u:pw@h/db?pool_max_conn_lifetime=-5s&pool_min_conns=9999999999999",
		"postgres://u:pw@h/db?statement_cache_capacity=-1&description_cache_capacity=x",
		"postgres://u:pw@h/db?connect_timeout=-1",
		"postgres://u:pw@h/db?default_query_exec_mode=nope",
		"postgres://u:pw@a,b:1,c/db?target_session_attrs=bogus",
		"postgres://u:pw@[::1/db",
		"postgres://u:pw@h/db?lock_table=a.b&lock_wait_poll=1h",
		"postgresql://u:pw@h/db?password=pw&sslrootcert=/nonexistent",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := Open(raw)
		if err == nil {
			_ = d.Close()
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || u.User == nil {
			return
		}
		// The password's text elsewhere in the URL (a host, a scheme) is
		// not secret there and may be shown.
		if p, ok := u.User.Password(); ok && len(p) >= 4 && strings.Count(raw, p) == 1 && strings.Contains(err.Error(), p) {
			t.Fatalf("Open(%q): %q contains the password", raw, err)
		}
	})
}
