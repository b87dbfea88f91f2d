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
	"strings"

	lock "github.com/zerotal/lock/sdk/go"
)

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
	data := []byte(C.GoString(s))
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
