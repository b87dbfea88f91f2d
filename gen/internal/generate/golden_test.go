package generate

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zerotal/lock/gen/internal/emitc"
	"github.com/zerotal/lock/gen/internal/emitgo"
	"github.com/zerotal/lock/gen/internal/emitnode"
	"github.com/zerotal/lock/gen/internal/emitpy"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/fixture from the generator's output")

// Fixture paths, relative to this package.
const (
	fixtureSpec   = "../../testdata/fixture/spec"
	fixtureGolden = "../../testdata/fixture/golden"
)

// TestGolden generates from the fixture spec and compares every file with
// testdata/fixture/golden/<path>.golden. Run with -update to accept a
// change, then read the diff.
func TestGolden(t *testing.T) {
	files, err := FromSpec(fixtureSpec, DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll(fixtureGolden); err != nil {
			t.Fatal(err)
		}
		for _, p := range files.Paths() {
			dst := filepath.Join(fixtureGolden, filepath.FromSlash(p)+".golden")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, files[p], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden := goldenPaths(t)
	if got := files.Paths(); strings.Join(got, "\n") != strings.Join(golden, "\n") {
		t.Fatalf("generated files\n\t%s\ngolden files\n\t%s\n(run go test -update to accept)", strings.Join(got, "\n\t"), strings.Join(golden, "\n\t"))
	}
	for _, p := range golden {
		want, err := os.ReadFile(filepath.Join(fixtureGolden, filepath.FromSlash(p)+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files[p], want) {
			t.Errorf("%s differs from its golden file: %s (run go test -update to accept)", p, firstDifference(want, files[p]))
		}
	}
}

// goldenPaths lists the golden files as generated paths.
func goldenPaths(t *testing.T) []string {
	var ps []string
	err := filepath.WalkDir(fixtureGolden, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixtureGolden, path)
		ps = append(ps, strings.TrimSuffix(filepath.ToSlash(rel), ".golden"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ps)
	return ps
}

// Every generated file comes out the same from a second run and starts
// with its language's generated-code header; every Go file parses, carries
// the header where go/ast looks for it and has no package doc (the
// hand-written doc.go files own those).
func TestOutputIsStableGeneratedGo(t *testing.T) {
	headers := map[string]string{".h": emitc.Header + "\n", ".py": emitpy.Header + "\n", ".js": emitnode.Header + "\n", ".ts": emitnode.Header + "\n"}
	for _, spec := range []string{fixtureSpec, filepath.Join(repoRoot, SpecDir)} {
		first, err := FromSpec(spec, DefaultLayout())
		if err != nil {
			t.Fatal(err)
		}
		second, err := FromSpec(spec, DefaultLayout())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range first.Paths() {
			if !bytes.Equal(first[p], second[p]) {
				t.Errorf("%s: %s differs between two runs", spec, p)
			}
			if h, ok := headers[path.Ext(p)]; ok {
				if !bytes.HasPrefix(first[p], []byte(h)) {
					t.Errorf("%s: %s does not start with %q", spec, p, h)
				}
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, first[p], parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %s does not parse: %v", spec, p, err)
				continue
			}
			if !ast.IsGenerated(f) || !bytes.HasPrefix(first[p], []byte("// "+emitgo.Header+"\n\n")) {
				t.Errorf("%s: %s does not start with the generated-code header", spec, p)
			}
			if f.Doc != nil {
				t.Errorf("%s: %s has a package doc comment: %q", spec, p, f.Doc.Text())
			}
		}
	}
}
