package main

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	lock "github.com/zerotal/lock/sdk/go"
)

func TestConfigTextIsNeverRewritten(t *testing.T) {
	for _, c := range []struct{ json, member string }{
		{`{"driver":"sqlite","sqlite":{"path":"/srv/caf` + "\xe9" + `.db"}}`, `"sqlite.path"`},
		{`{"driver":"file","file":{"dir":"/srv/l` + "\xff" + `cks"}}`, `"file.dir"`},
		{`{"prefix":"app\ud800:"}`, `"prefix"`},
		{`{"prefix":"app\udc00:"}`, `"prefix"`},
		{`{"prefix":"a\ud800\u0041"}`, `"prefix"`},
		{`{"driver":"memory","pre` + "\xc3" + `fix":"x"}`, `"pre`},
	} {
		_, err := parseConfig([]byte(c.json))
		var iae *lock.InvalidArgumentError
		if !errors.As(err, &iae) || !strings.Contains(iae.Field, c.member) {
			t.Errorf("parseConfig(%q) = %v; want an invalid argument naming member %s", c.json, err, c.member)
		}
	}
	// Valid text, escapes and surrogate pairs included, is taken as it is.
	cfg, err := parseConfig([]byte(`{"prefix":"caf\u00e9 \ud83d\udd12 é:"}`))
	if err != nil || cfg.Prefix != "café 🔒 é:" {
		t.Fatalf("parseConfig of valid text = %+v, %v", cfg, err)
	}
}

// FuzzParseConfig feeds arbitrary bytes to zl_open's configuration parser,
// which must never panic, and must either refuse them with an invalid
// argument or return a configuration whose text it did not rewrite.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"driver":"sqlite","sqlite":{"path":"/tmp/x.db"}}`, `{"redis":{"url":"redis://h"}}`,
		`{"prefix":"a\ud800b"}`, "{\"prefix\":\"\xff\"}", `{"driver":7}`, `[1,2]`, `{"file":{"dir":"d"}} x`,
		`{"prefix":"\ud83d\udd12"}`, `{"sqlite":null}`, `{"Driver":"memory"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return // NULL or "" reads the environment
		}
		cfg, err := parseConfig(data)
		if err != nil {
			if !errors.Is(err, lock.ErrInvalidArgument) {
				t.Fatalf("parseConfig(%q) = %v; want ErrInvalidArgument", data, err)
			}
			return
		}
		// U+FFFD in a value is a rewrite unless the input wrote it, raw
		// or escaped (JSON's hex digits may be of either case).
		for _, s := range []string{cfg.Driver, cfg.Prefix, cfg.SQLite.Path, cfg.Redis.URL, cfg.File.Dir} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) && !strings.Contains(strings.ToLower(string(data)), "\\ufffd") && !strings.Contains(string(data), "\uFFFD") {
				t.Fatalf("parseConfig(%q) accepted it and rewrote a value to %q", data, s)
			}
		}
	})
}
