package main

/*
#include <stddef.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	lock "github.com/zerotal/lock/sdk/go"
)

// checkText rejects configuration text that encoding/json would quietly
// rewrite: invalid UTF-8, and \u escapes of lone surrogates, which it
// replaces with U+FFFD. A path in another encoding would then name another
// file or directory, and the library would lock one that the processes using
// the real path never look at.
func checkText(data []byte) error {
	at, what := badText(data)
	if at < 0 {
		return nil
	}
	field := configField
	if path := memberAt(data, at); path != "" {
		field += " member " + strconv.Quote(path)
	}
	return &lock.InvalidArgumentError{Field: field, Reason: fmt.Sprintf("%s at byte %d: configuration text must be UTF-8, and is never rewritten", what, at)}
}

// badText returns the offset of the first invalid UTF-8 sequence or lone
// surrogate escape in data, and what it is; -1 when there is none.
func badText(data []byte) (int, string) {
	inString := false
	for i := 0; i < len(data); {
		c := data[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c)
			}
			i += n
			continue
		}
		switch {
		case c == '"':
			inString = !inString
		case inString && c == '\\' && i+1 < len(data) && data[i+1] == 'u':
			r, ok := hex4(data, i+2)
			if ok && utf16.IsSurrogate(r) {
				if lo, ok := hex4(data, i+8); r < 0xDC00 && ok && lo >= 0xDC00 && lo <= 0xDFFF &&
					data[i+6] == '\\' && data[i+7] == 'u' {
					i += 12 // a high surrogate and its low one: a valid pair
					continue
				}
				return i, fmt.Sprintf("lone surrogate \\u%04X", r)
			}
			i += 2
			continue
		case inString && c == '\\':
			i += 2
			continue
		}
		i++
	}
	return -1, ""
}

// hex4 reads the four hex digits of a \u escape at data[at:].
func hex4(data []byte, at int) (rune, bool) {
	if at < 0 || at+4 > len(data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[at:at+4]), 16, 16)
	return rune(n), err == nil
}

// memberAt returns the dotted path of the member of the JSON object data
// whose name or value holds the byte at offset, or "" when it cannot tell.
func memberAt(data []byte, offset int) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object  bool
		key     string
		wantKey bool
	}
	var stack []frame
	path := func() string {
		var parts []string
		for _, f := range stack {
			if f.object && f.key != "" {
				parts = append(parts, f.key)
			}
		}
		return strings.Join(parts, ".")
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		end := int(dec.InputOffset())
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].wantKey = true
				}
				stack = append(stack, frame{object: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:top]
				if top > 0 && stack[top-1].object {
					stack[top-1].wantKey = true
				}
			}
			continue
		case string:
			if top >= 0 && stack[top].object && stack[top].wantKey {
				stack[top].key, stack[top].wantKey = t, false
				if end > offset {
					return path()
				}
				continue
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].wantKey = true
		}
		if end > offset {
			return path()
		}
	}
}

// jsonObject describes the members a JSON object may have: a nil value is
// a plain member, a non-nil one a nested object. configMembers, generated
// from the spec, is the configuration's.
type jsonObject map[string]jsonObject

// configField is the field name errors about the configuration use.
const configField = "config_json"

// configFromJSON reads zl_open's configuration: NULL or "" reads it from
// the environment, as lock.ConfigFromEnv does; otherwise it is a JSON
// object with the members of lock.Config, all optional. Unknown members,
// which are typos that would silently select a default, are an error that
// names every one of them.
func configFromJSON(s *C.char) (lock.Config, error) {
	if s == nil || *s == 0 {
		return lock.ConfigFromEnv(), nil
	}
	return parseConfig([]byte(C.GoString(s)))
}

// parseConfig is configFromJSON for a non-empty configuration, in Go terms
// (so that it can be fuzzed: test files cannot use cgo).
func parseConfig(data []byte) (lock.Config, error) {
	if err := checkText(data); err != nil {
		return lock.Config{}, err
	}
	var unknown []string
	if err := unknownMembers(data, configMembers, "", &unknown); err != nil {
		return lock.Config{}, &lock.InvalidArgumentError{Field: configField, Reason: err.Error()}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return lock.Config{}, &lock.InvalidArgumentError{Field: configField, Reason: "unknown members " + strings.Join(unknown, ", ") + " (known: " + strings.Join(memberNames(configMembers, ""), ", ") + ")"}
	}
	var cfg lock.Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&cfg); err != nil {
		return lock.Config{}, &lock.InvalidArgumentError{Field: configField, Reason: err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return lock.Config{}, &lock.InvalidArgumentError{Field: configField, Reason: "has data after the JSON object"}
	}
	return cfg, nil
}

// unknownMembers appends to unknown the members of the JSON object data
// that want does not list, as dotted paths. encoding/json would ignore
// them, and would match member names without regard to case: here a name
// must be exact.
func unknownMembers(data []byte, want jsonObject, path string, unknown *[]string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		if path == "" {
			return fmt.Errorf("is not a JSON object: %w", err)
		}
		return fmt.Errorf("member %s is not a JSON object: %w", strings.TrimSuffix(path, "."), err)
	}
	for name, raw := range obj {
		sub, ok := want[name]
		switch {
		case !ok:
			*unknown = append(*unknown, fmt.Sprintf("%q", path+name))
		case sub != nil && string(raw) != "null":
			if err := unknownMembers(raw, sub, path+name+".", unknown); err != nil {
				return err
			}
		}
	}
	return nil
}

// memberNames lists the plain members of want as dotted paths, sorted.
func memberNames(want jsonObject, path string) []string {
	var out []string
	for name, sub := range want {
		if sub == nil {
			out = append(out, path+name)
			continue
		}
		out = append(out, memberNames(sub, path+name+".")...)
	}
	sort.Strings(out)
	return out
}
