package driver_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/zerotal/lock/driver"
)

func TestParseURLNeverEchoesThePassword(t *testing.T) {
	for _, raw := range []string{
		"redis://user:s3cr%zzet@host:6379",   // bad escape in the password
		"redis://user:s3cret@host:port",      // bad port
		"redis://user:s3cret@ho st:6379",     // bad host
		"redis://user:s3cret@host:6379/\x7f", // control character
	} {
		_, err := driver.ParseURL(raw)
		if !errors.Is(err, driver.ErrBadURL) {
			t.Errorf("ParseURL(%q) = %v; want ErrBadURL", raw, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cr") {
			t.Errorf("ParseURL(%q) error %q repeats the password", raw, err)
		}
	}
	if u, err := driver.ParseURL("redis://host:6379/0"); err != nil || u.Host != "host:6379" {
		t.Errorf("ParseURL of a good URL = %v, %v", u, err)
	}
}

func TestRedact(t *testing.T) {
	u, _ := url.Parse("redis://user:p%40ss@host/?password=p%40ss")
	got := driver.Redact("dial redis://user:p%40ss@host: auth p@ss refused (password=p%40ss)", u)
	if strings.Contains(got, "p@ss") || strings.Contains(got, "p%40ss") {
		t.Errorf("Redact left the password in %q", got)
	}
	if got := driver.Redact("nothing secret", u); got != "nothing secret" {
		t.Errorf("Redact changed a message without the password: %q", got)
	}
}

func TestCheckParams(t *testing.T) {
	u, _ := url.Parse("x://h/?a=1&b=2")
	if err := driver.CheckParams(u, "a", "b"); err != nil {
		t.Errorf("known parameters refused: %v", err)
	}
	for _, c := range []struct {
		raw, says string
		known     []string
	}{
		{"x://h/?c=1", `unknown parameter "c" (known: a, b)`, []string{"a", "b"}},
		{"x://h/?c=1", "x URLs take none", nil},
		{"x://h/?a=1&a=2", `"a" is given 2 times`, []string{"a"}},
	} {
		u, _ := url.Parse(c.raw)
		err := driver.CheckParams(u, c.known...)
		if !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("CheckParams(%s, %v) = %v; want ErrBadURL saying %q", c.raw, c.known, err, c.says)
		}
	}
}

func TestURLPath(t *testing.T) {
	for raw, want := range map[string]string{
		"sqlite:///var/lib/locks.db": "/var/lib/locks.db",
		"sqlite:locks.db":            "locks.db",
		"file:./a%20b":               "./a b",
		"file:///tmp/a%3Ab":          "/tmp/a:b",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := driver.URLPath(u); err != nil || got != want {
			t.Errorf("URLPath(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"sqlite://host/locks.db", "sqlite:", "file://user@/x"} {
		u, _ := url.Parse(raw)
		if _, err := driver.URLPath(u); !errors.Is(err, driver.ErrBadURL) {
			t.Errorf("URLPath(%s) = %v; want ErrBadURL", raw, err)
		}
	}
}

// PathURL and URLPath are inverses for every path, through the URL's text
// (what a Config built from fields turns into before a driver opens it).
func FuzzPathURL(f *testing.F) {
	for _, p := range []string{"/var/lib/locks.db", "locks.db", "a:b", "./x", "/a b/%41", "?#", "//host"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if path == "" {
			return
		}
		u, err := url.Parse(driver.PathURL("sqlite", path).String())
		if err != nil {
			t.Fatalf("PathURL(%q) = %q, which does not parse: %v", path, driver.PathURL("sqlite", path), err)
		}
		got, err := driver.URLPath(u)
		if err != nil || got != path {
			t.Fatalf("URLPath(PathURL(%q) = %q) = %q, %v", path, u, got, err)
		}
	})
}
