package generate

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zerotal/lock/gen/internal/emitgo"
)

func write(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Diff finds files to create and update, and generated files the spec no
// longer produces, without touching hand-written files that merely end in
// _gen.go; Apply then makes the tree match.
func TestDiffAndApply(t *testing.T) {
	root := t.TempDir()
	header := "// " + emitgo.Header + "\n\npackage lock\n"
	files := Files{
		"sdk/go/a_gen.go": []byte(header + "// a\n"),
		"sdk/go/b_gen.go": []byte(header + "// b\n"),
	}
	write(t, root, "sdk/go/b_gen.go", header+"// old b\n")
	write(t, root, "sdk/go/gone_gen.go", header+"// no longer generated\n")
	write(t, root, "sdk/go/mine_gen.go", "package lock\n\n// written by hand\n")
	write(t, root, "sdk/go/doc.go", "package lock\n")

	changes, err := Diff(root, files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Action+" "+c.Path)
	}
	want := []string{"create sdk/go/a_gen.go", "update sdk/go/b_gen.go", "delete sdk/go/gone_gen.go"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff = %v, want %v", got, want)
	}
	if changes[1].Detail == "" {
		t.Error("an update does not say where the files differ")
	}

	if err := Apply(root, files, changes); err != nil {
		t.Fatal(err)
	}
	if again, err := Diff(root, files); err != nil || len(again) != 0 {
		t.Errorf("Diff after Apply = %v, %v; want nothing", again, err)
	}
	if _, err := os.Stat(filepath.Join(root, "sdk/go/mine_gen.go")); err != nil {
		t.Errorf("a hand-written _gen.go without the header was touched: %v", err)
	}
}

func TestFirstDifference(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{"a\nb\n", "a\nc\n", `line 2: have "b", want "c"`},
		{"a\n", "a\nb\n", `line 2: have "", want "b"`},
	} {
		if got := firstDifference([]byte(c.old), []byte(c.new)); got != c.want {
			t.Errorf("firstDifference(%q, %q) = %q, want %q", c.old, c.new, got, c.want)
		}
	}
}
