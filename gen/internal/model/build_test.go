package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zerotal/lock/gen/internal/load"
)

// fixtureDir is the golden tests' spec, which every case below breaks in
// one way.
const fixtureDir = "../../testdata/fixture/spec"

// fixtureModule is the fixture's import path, kept by the copies so that
// its imports still resolve.
const fixtureModule = "github.com/zerotal/lock/gen/testdata/fixture/spec"

// buildEdited copies the fixture into a module of its own, applies edits
// (file → old → new, each old found exactly once) and builds the model.
func buildEdited(t *testing.T, edits map[string][2]string) (*Model, error) {
	t.Helper()
	t.Setenv("GOWORK", "off")
	dir := t.TempDir()
	err := filepath.WalkDir(fixtureDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixtureDir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if e, ok := edits[filepath.ToSlash(rel)]; ok {
			if strings.Count(string(b), e[0]) != 1 {
				t.Fatalf("edit of %s: %q is not in it exactly once", rel, e[0])
			}
			b = []byte(strings.Replace(string(b), e[0], e[1], 1))
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+fixtureModule+"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := load.Dir(dir)
	if err != nil {
		return nil, err
	}
	return Build(s)
}

func TestBuildFixture(t *testing.T) {
	m, err := buildEdited(t, nil)
	if err != nil {
		t.Fatalf("the fixture does not build: %v", err)
	}
	if len(m.Codes) != 6 || len(m.Errors) != 3 || len(m.Surfaces) != 2 || len(m.Configs) != 2 || len(m.Options) != 2 || len(m.Contract) != 5 {
		t.Errorf("fixture model: %d codes, %d errors, %d surfaces, %d configs, %d option sets, %d contract decls",
			len(m.Codes), len(m.Errors), len(m.Surfaces), len(m.Configs), len(m.Options), len(m.Contract))
	}
	if in, ok := m.InputError(); !ok || in.Name != "InvalidError" {
		t.Errorf("InputError() = %v, %v", in.Name, ok)
	}
	if m.ABI == nil || m.ABI.Library != "fixture_lib" || m.ABI.Prefix != "fx" || m.ABI.Version != 3 || len(m.ABI.Methods) != 4 {
		t.Fatalf("fixture ABI: %+v", m.ABI)
	}
	wait := m.Surfaces[1].Methods[1]
	if wait.C.Name != "fx_wait" || strings.Join(wait.C.Flatten, ",") != "Patience,Eager" {
		t.Errorf("Handle.Wait's C binding: %+v", wait.C)
	}
	if drop := m.ABI.Methods[3]; !drop.C.Frees || !drop.ABIOnly || drop.Impl != "Drop" {
		t.Errorf("ABI.Drop: %+v", drop)
	}
	if len(m.GoTypes) != 1 || m.GoTypes[0].Name != "Tracer" {
		t.Errorf("Go-only types: %+v", m.GoTypes)
	}
	if f := m.Options[1].Fields[2]; f.Join != "joinTracers" || !f.GoOnly() {
		t.Errorf("ServiceTuning.Tracer: %+v", f)
	}
	if f := m.Options[1].Fields[3]; f.Type.Kind != Pointer || f.Type.Elem.Ref == nil || *f.Type.Elem.Ref != (Ref{Path: "log/slog", Name: "Logger"}) {
		t.Errorf("ServiceTuning.Log: %+v", f)
	}
	if m.Surfaces[0].CHandle != "fx_service" {
		t.Errorf("Service's handle type: %q", m.Surfaces[0].CHandle)
	}
}

// Every mistake in a spec is an error that says what and where: the
// generator never guesses and never emits a partial API.
func TestBuildRejectsBrokenSpecs(t *testing.T) {
	cases := []struct {
		name  string
		edits map[string][2]string
		want  string
	}{
		{"missing doc", map[string][2]string{"api.go": {"// Handle is one name's handle.\n//\n", ""}}, "Handle has no doc comment"},
		{"doc not starting with the name", map[string][2]string{"api.go": {"// Take takes", "// Takes"}}, "doc comment of Take must start with its name"},
		{"unknown directive", map[string][2]string{"api.go": {"//lock:type\n//lock:c fx_handle", "//lock:typ\n//lock:c fx_handle"}}, "unknown directive //lock:typ"},
		{"unknown tag key", map[string][2]string{"settings.go": {`default:"a" env`, `defualt:"a" env`}}, "unknown tag keys defualt"},
		{"codes out of order", map[string][2]string{"errors.go": {`code:"4"`, `code:"1"`}}, "codes must increase"},
		{"two fallbacks", map[string][2]string{"errors.go": {`code:"0" http:"200"`, `code:"0" http:"200" fallback:"true"`}}, "exactly one code must be the fallback"},
		{"bad format", map[string][2]string{"errors.go": {"is busy[ (waited", "is busy[ (waited [nested]"}}, "format:"},
		{"format mentions no field", map[string][2]string{"errors.go": {"{Op} failed", "{Opp} failed"}}, "format mentions Opp"},
		{"unnamed error type", map[string][2]string{"errors.go": {`error:"BrokenError" rank:"3"`, `rank:"3"`}}, "BrokenError: no code of Codes names it"},
		{"code without a match has a rank", map[string][2]string{"errors.go": {`code:"9" http:"500" fallback:"true"`, `code:"9" http:"500" fallback:"true" rank:"2"`}}, "needs a rank > 0, and only such a code"},
		{"function in the spec", map[string][2]string{"settings.go": {"type Setting struct{}", "type Setting struct{}\n\nfunc helper() {}"}}, "the spec declares types only"},
		{"does not compile", map[string][2]string{"settings.go": {"Eager bool", "Eager boool"}}, "undefined: boool"},
		{"unsupported type", map[string][2]string{"api.go": {"Name() string", "Name() map[string]int"}}, "is not one the spec supports"},
		{"implementation that is not an unexported name", map[string][2]string{"api.go": {"//lock:impl newHandle", "//lock:impl NewHandle"}}, "//lock:impl wants an unexported identifier"},
		{"default without a matching method", map[string][2]string{"api.go": {"Get(name string, ttl time.Duration) Handle\n}\n\n// Service", "Get(name string) Handle\n}\n\n// Service"}}, "//lock:default needs Service.Get"},
		{"option set naming no type", map[string][2]string{"settings.go": {"//lock:options Setting\n", "//lock:options Settingz\n"}}, `names "Settingz"`},
		{"implies a non-bool", map[string][2]string{"settings.go": {`implies:"Eager"`, `implies:"Patience"`}}, "implies Patience, which is not a bool option"},
		{"config field without json", map[string][2]string{"settings.go": {` json:"mode"`, ""}}, "needs a json name"},
		{"default outside oneof", map[string][2]string{"settings.go": {`default:"a" env:"FIX_BACKEND"`, `default:"c" env:"FIX_BACKEND"`}}, `default "c" is not one of`},
		{"input error without Reason", map[string][2]string{"errors.go": {"Reason string // why", "Why string // why"}}, "needs string fields Field and Reason"},
		{"method without a C decision", map[string][2]string{"api.go": {"\t//\n\t//lock:c fx_name\n", ""}}, "Handle.Name: with a //lock:abi interface, every method needs //lock:c NAME or //lock:c - WHY"},
		{"C binding without a reason to skip", map[string][2]string{"api.go": {"//lock:c - driver.Info has no C form", "//lock:c -"}}, "say why"},
		{"unknown C word", map[string][2]string{"api.go": {"//lock:c fx_take out=taken", "//lock:c fx_take outt=taken"}}, `unknown or malformed word "outt=taken"`},
		{"C name without the prefix", map[string][2]string{"api.go": {"//lock:c fx_get\n", "//lock:c get_handle\n"}}, `C name "get_handle" must start with fx_`},
		{"C name used twice", map[string][2]string{"api.go": {"//lock:c fx_since out=unix_ms", "//lock:c fx_name out=unix_ms"}}, "C name fx_name is already used"},
		{"static on a non-string", map[string][2]string{"cabi.go": {"//lock:c fx_count", "//lock:c fx_count static"}}, "static and thread describe a returned string"},
		{"flattened option that does not exist", map[string][2]string{"api.go": {"options=Patience,Eager", "options=Patience,Eagre"}}, "Tuning has no field Eagre"},
		{"two values for C", map[string][2]string{"api.go": {"//lock:c - driver.Info has no C form", "//lock:c fx_info"}}, "returns at most one value besides its code"},
		{"surface without a handle type", map[string][2]string{"api.go": {"//lock:c fx_handle\n", ""}}, "Handle: with a //lock:abi interface, every API type needs //lock:c HANDLE_TYPE"},
		{"malformed abi directive", map[string][2]string{"cabi.go": {"//lock:abi fixture_lib fx 3", "//lock:abi fixture_lib"}}, "//lock:abi wants LIBRARY PREFIX VERSION"},
		{"abi function without a C name", map[string][2]string{"cabi.go": {"//lock:c fx_detail thread", "//lock:c - no"}}, "every function of the //lock:abi interface needs //lock:c NAME"},
		{"enum values out of order", map[string][2]string{"errors.go": {`value:"3"`, `value:"1"`}}, "values must increase"},
		{"enum value without text", map[string][2]string{"errors.go": {` text:"melted"`, ""}}, "Breakages.Melted: needs a text tag"},
		{"enum without a table", map[string][2]string{"errors.go": {"//lock:enum Breakage\n", ""}}, "no //lock:enum Breakage table"},
		{"enum table naming no type", map[string][2]string{"errors.go": {"//lock:enum Breakage\n", "//lock:enum Breakag\n"}}, "names no int type"},
		{"option of a declared type that is not //lock:go", map[string][2]string{"settings.go": {"//lock:go\n", ""}}, "Tracer is not one"},
		{"//lock:go type with fields", map[string][2]string{"settings.go": {"type Tracer struct{}", "type Tracer struct{ X int }"}}, "a //lock:go type is declared as struct{}"},
		{"Go-only option with a default", map[string][2]string{"settings.go": {"Log *slog.Logger", "Log *slog.Logger `default:\"x\"`"}}, "a Go-only option defaults to its zero value"},
		{"join that is not an unexported name", map[string][2]string{"settings.go": {`join:"joinTracers"`, `join:"JoinTracers"`}}, "join: wants the name of an unexported func"},
		{"C binding without an ABI", map[string][2]string{"cabi.go": {"package spec", "//go:build ignore\n\npackage spec"}}, "Service.Close: //lock:c without a //lock:abi interface"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := buildEdited(t, c.edits)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}
