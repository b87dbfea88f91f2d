package cabi

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zerotal/lock/gen/internal/load"
	"github.com/zerotal/lock/gen/internal/model"
)

const (
	fixtureDir    = "../../testdata/fixture/spec"
	fixtureModule = "github.com/zerotal/lock/gen/testdata/fixture/spec"
)

// lowerEdited copies the fixture spec into a module of its own, applies
// edits (file → old → new, each old found exactly once) and lowers it.
func lowerEdited(t *testing.T, edits map[string][2]string) (*ABI, error) {
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
		t.Fatal(err)
	}
	m, err := model.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return Lower(m)
}

// The lowering follows the rules of the package doc: one check per rule,
// on the fixture.
func TestLowerFixture(t *testing.T) {
	a, err := lowerEdited(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	sig := map[string]string{}
	for _, f := range a.Funcs {
		var ps []string
		for _, p := range f.Params {
			ps = append(ps, p.Decl())
		}
		sig[f.Name] = Declare(f.Result.CType, f.Name) + "(" + strings.Join(ps, ", ") + ")"
	}
	want := map[string]string{
		"fx_count":    "int fx_count()",
		"fx_describe": "const char *fx_describe(int code)",
		"fx_detail":   "const char *fx_detail()",
		"fx_dial":     "int fx_dial(const char *settings_json, fx_service *out)",
		"fx_close":    "int fx_close(fx_service s)",
		"fx_do":       "int fx_do(fx_service s, const char *name, int64_t ttl_ms, const fx_tuning *opts, fx_callback fn, void *user_data)",
		"fx_get":      "int fx_get(fx_service s, const char *name, int64_t ttl_ms, fx_handle *out)",
		"fx_take":     "int fx_take(fx_handle h, int *taken)",
		"fx_wait":     "int fx_wait(fx_handle h, int64_t patience_ms, int eager)",
		"fx_name":     "int fx_name(fx_handle h, char *buf, size_t *len)",
		"fx_since":    "int fx_since(fx_handle h, int64_t *unix_ms)",
		"fx_drop":     "int fx_drop(fx_handle h)",
	}
	if !reflect.DeepEqual(sig, want) {
		for name, s := range sig {
			if want[name] != s {
				t.Errorf("%s lowered to\n\t%s\nwant\n\t%s", name, s, want[name])
			}
		}
		t.Fatalf("%d functions, want %d", len(sig), len(want))
	}
	var order []string
	for _, f := range a.Funcs {
		order = append(order, f.Name)
	}
	// The library's own functions first, then each surface's, the glue on
	// a handle after its surface's methods.
	if got := strings.Join(order, " "); got != "fx_count fx_describe fx_detail fx_dial fx_close fx_do fx_get fx_take fx_wait fx_name fx_since fx_drop" {
		t.Errorf("order: %s", got)
	}
	if a.OK != "FX_OK" || a.Fallback != "FX_UNKNOWN" || a.Detail != "fx_detail" || a.Describe != "fx_describe" {
		t.Errorf("roles: ok %s, fallback %s, detail %s, describe %s", a.OK, a.Fallback, a.Detail, a.Describe)
	}
	if a.Callback == nil || a.Callback.Handle.CType != "fx_handle" {
		t.Errorf("callback: %+v", a.Callback)
	}
	var fields []string
	for _, f := range a.Options.Fields {
		fields = append(fields, f.CType+" "+f.CName)
	}
	if got := strings.Join(fields, "; "); got != "int64_t patience_ms; int patience_set; int eager; int64_t period_ms" {
		t.Errorf("options struct: %s", got)
	}
	h := a.Handles[1]
	if h.CType != "fx_handle" || h.FreedBy != "fx_drop" || strings.Join(h.MadeBy, ",") != "fx_get" {
		t.Errorf("handle: %+v", h)
	}
	if got := a.Config.ConfigLines(); strings.Join(got, "\n") != `backend: "a", "b"; default "a"; environment FIX_BACKEND
store.dir: default $FIX_HOME; environment FIX_DIR
store.mode: environment FIX_MODE` {
		t.Errorf("config lines:\n%s", strings.Join(got, "\n"))
	}
}

// A C ABI that cannot be lowered is an error naming the function, never a
// header with a hole.
func TestLowerRejects(t *testing.T) {
	cases := []struct {
		name  string
		edits map[string][2]string
		want  string
	}{
		{"handle nobody frees", map[string][2]string{"cabi.go": {"//lock:c fx_drop frees", "//lock:c fx_drop"}}, "handle fx_handle: no function frees it"},
		{"handle freed twice", map[string][2]string{"api.go": {"//lock:c fx_take out=taken", "//lock:c fx_take frees out=taken"}}, "Drop: handle fx_handle is already freed by fx_take"},
		{"caller-buffer string returned directly", map[string][2]string{"cabi.go": {"//lock:c fx_describe static", "//lock:c fx_describe"}}, "a string returned directly is static or thread"},
		{"function with nothing to say", map[string][2]string{"cabi.go": {"Count() int", "Count()"}}, "has nothing to say in C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := lowerEdited(t, c.edits)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"RetryDelay": "retry_delay", "ABIVersion": "abi_version", "OK": "ok", "NotAcquired": "not_acquired",
		"DeadlineExceeded": "deadline_exceeded", "Config": "config", "HTTPStatus2": "http_status2",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplaceWords(t *testing.T) {
	names := map[string]string{"Acquire": "zl_acquire", "*LostError": "ZL_LOST", "LostError": "ZL_LOST", "ErrClosed": "ZL_CLOSED", "Try": "zl_try"}
	for in, want := range map[string]string{
		"Acquire resets it.":                           "zl_acquire resets it.",
		"Try returns a *LostError, since":              "zl_try returns ZL_LOST, since",
		"returns a\n*LostError when":                   "returns ZL_LOST when",
		"an error matching ErrClosed.":                 "an error matching ZL_CLOSED.",
		"as Manager.Try does; AcquireFenced and Tryst": "as Manager.Try does; AcquireFenced and Tryst",
		"calls Try.": "calls zl_try.",
	} {
		if got := replaceWords(in, names); got != want {
			t.Errorf("replaceWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReflow(t *testing.T) {
	got := Reflow("one two three four\nfive six\n\n\tkept as is\n- and this\n\nseven", 10)
	want := []string{"one two", "three four", "five six", "", "\tkept as is", "- and this", "", "seven"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Reflow = %q, want %q", got, want)
	}
}
