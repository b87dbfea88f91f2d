package model

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	cases := []struct {
		in   string
		want []Piece
	}{
		{"plain", []Piece{{Text: "plain"}}},
		{"lock: {Key:q} not acquired[ after waiting {Waited}]", []Piece{
			{Text: "lock: "},
			{Field: "Key", Quote: true},
			{Text: " not acquired"},
			{Text: " after waiting ", Guard: "Waited"},
			{Field: "Waited", Guard: "Waited"},
		}},
		{"{Op}[ {Key:q}]: {Err}", []Piece{
			{Field: "Op"},
			{Text: " ", Guard: "Key"},
			{Field: "Key", Quote: true, Guard: "Key"},
			{Text: ": "},
			{Field: "Err"},
		}},
		{"100%", []Piece{{Text: "100%"}}},
	}
	for _, c := range cases {
		got, err := parseFormat(c.in)
		if err != nil {
			t.Errorf("parseFormat(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseFormat(%q) =\n%+v\nwant\n%+v", c.in, got, c.want)
		}
	}
}

func TestParseFormatRejects(t *testing.T) {
	cases := map[string]string{
		"a {Key":              "unterminated {",
		"a {Key:x}":           "bad field reference",
		"a {}":                "bad field reference",
		"a [b":                "unterminated [",
		"a ]":                 "] without [",
		"a }":                 "} without {",
		"[a [b {K}]]":         "do not nest",
		"[plain]":             "must mention a field",
		"[{A} and {B}]":       "guarded by one field",
		"x[{A}] y [{B} {A}]z": "guarded by one field",
	}
	for in, want := range cases {
		_, err := parseFormat(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseFormat(%q) = %v; want an error containing %q", in, err, want)
		}
	}
}
