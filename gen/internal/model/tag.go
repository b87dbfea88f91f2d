package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// tags are a struct tag's key:"value" pairs.
type tags map[string]string

// parseTag parses a struct tag literal (with its backquotes or quotes) the
// way reflect.StructTag.Lookup reads one, but strictly: a malformed tag or a
// repeated key is an error rather than being ignored.
func parseTag(lit string) (tags, error) {
	ts := tags{}
	if lit == "" {
		return ts, nil
	}
	s, err := strconv.Unquote(lit)
	if err != nil {
		return nil, fmt.Errorf("tag %s: %w", lit, err)
	}
	for s = strings.TrimLeft(s, " "); s != ""; s = strings.TrimLeft(s, " ") {
		key, rest, ok := strings.Cut(s, ":")
		if !ok || key == "" || strings.ContainsAny(key, " \"") || !strings.HasPrefix(rest, `"`) {
			return nil, fmt.Errorf("tag %s: malformed near %q", lit, s)
		}
		end := 1
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			return nil, fmt.Errorf("tag %s: unterminated value of %q", lit, key)
		}
		val, err := strconv.Unquote(rest[:end+1])
		if err != nil {
			return nil, fmt.Errorf("tag %s: value of %q: %w", lit, key, err)
		}
		if _, dup := ts[key]; dup {
			return nil, fmt.Errorf("tag %s: key %q repeated", lit, key)
		}
		ts[key] = val
		s = rest[end+1:]
	}
	return ts, nil
}

// take removes and returns key.
func (ts tags) take(key string) string {
	v := ts[key]
	delete(ts, key)
	return v
}

// takeInt removes key and parses it as an integer; absent gives 0.
func (ts tags) takeInt(key string) (int, error) {
	v, ok := ts[key]
	delete(ts, key)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("tag %s:%q: not an integer", key, v)
	}
	return n, nil
}

// done fails on any key nobody took: a typo must not pass silently.
func (ts tags) done() error {
	if len(ts) == 0 {
		return nil
	}
	keys := make([]string, 0, len(ts))
	for k := range ts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Errorf("unknown tag keys %s", strings.Join(keys, ", "))
}
