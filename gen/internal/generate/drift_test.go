package generate

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../../.."

// TestCommittedFilesAreFresh regenerates from the real spec in memory and
// compares with the tree: a spec edit without make generate, a hand edit of
// a generated file, or a generated file left behind all fail here.
func TestCommittedFilesAreFresh(t *testing.T) {
	files, err := Repo(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Diff(repoRoot, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		t.Errorf("stale generated file: %s", c)
	}
	if len(changes) > 0 {
		t.Log("run `make generate` (go run ./gen/cmd/lockgen -w from the repository root)")
	}
}

// TestGeneratedCodeCompiles type-checks the packages the generator writes
// into, with the freshly generated files laid over the tree, so the output
// is proven to compile against the hand-written engine and glue before it
// is ever written.
func TestGeneratedCodeCompiles(t *testing.T) {
	files, err := Repo(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	overlay := map[string][]byte{}
	for p, b := range files {
		overlay[filepath.Join(root, filepath.FromSlash(p))] = b
	}
	for _, dir := range []string{"driver", "sdk/go", "sdk/cshared"} {
		cfg := &packages.Config{
			Mode:    packages.NeedName | packages.NeedTypes,
			Dir:     filepath.Join(root, dir),
			Overlay: overlay,
		}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var msgs []string
		packages.Visit(pkgs, nil, func(p *packages.Package) {
			for _, e := range p.Errors {
				msgs = append(msgs, e.Error())
			}
		})
		if len(pkgs) == 0 || len(msgs) > 0 {
			t.Errorf("%s does not compile with the generated files (%d packages):\n%s", dir, len(pkgs), strings.Join(msgs, "\n"))
		}
	}
}
