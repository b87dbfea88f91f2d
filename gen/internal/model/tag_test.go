package model

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTag(t *testing.T) {
	got, err := parseTag("`code:\"1\" message:\"lock: not \\\"acquired\\\"\"  rank:\"1\"`")
	want := tags{"code": "1", "message": `lock: not "acquired"`, "rank": "1"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseTag = %v, %v; want %v", got, err, want)
	}
	for lit, wantErr := range map[string]string{
		"`code:1`":                "malformed",
		"`code:\"1`":              "unterminated",
		"`code:\"1\" code:\"2\"`": "repeated",
		"`:\"1\"`":                "malformed",
	} {
		if _, err := parseTag(lit); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("parseTag(%s) = %v; want an error containing %q", lit, err, wantErr)
		}
	}
}

func TestTagsDoneNamesLeftoverKeys(t *testing.T) {
	ts := tags{"defualt": "x", "env": "Y"}
	ts.take("env")
	if err := ts.done(); err == nil || !strings.Contains(err.Error(), "defualt") {
		t.Errorf("done() = %v; want the unknown key named", err)
	}
}
