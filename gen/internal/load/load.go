// Package load reads the spec with go/packages. It fails loudly: a spec
// that does not type-check, or a missing package, is an error, never a
// partial model.
package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Mode is what the generator needs from go/packages: names and types to
// resolve every declaration, syntax for the doc comments and directives.
const Mode = packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax

// ContractDir is the spec's subpackage holding the driver contract.
const ContractDir = "driver"

// Spec is a loaded spec: the API package and its driver-contract
// subpackage.
type Spec struct {
	API      *packages.Package
	Contract *packages.Package
}

// Dir loads the spec rooted at dir: the package in dir and the one in
// dir/driver.
func Dir(dir string) (*Spec, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("load spec: %s is not a directory", abs)
	}
	cfg := &packages.Config{Mode: Mode, Dir: abs}
	pkgs, err := packages.Load(cfg, ".", "./"+ContractDir)
	if err != nil {
		return nil, fmt.Errorf("load spec %s: %w", dir, err)
	}
	if err := loadErrors(pkgs); err != nil {
		return nil, fmt.Errorf("load spec %s: %w", dir, err)
	}
	s := &Spec{}
	for _, p := range pkgs {
		if len(p.Syntax) == 0 {
			continue
		}
		switch filepath.Dir(p.Fset.Position(p.Syntax[0].Package).Filename) {
		case abs:
			s.API = p
		case filepath.Join(abs, ContractDir):
			s.Contract = p
		}
	}
	switch {
	case s.API == nil:
		return nil, fmt.Errorf("load spec %s: no Go package in %s", dir, abs)
	case s.Contract == nil:
		return nil, fmt.Errorf("load spec %s: no Go package in %s", dir, filepath.Join(abs, ContractDir))
	}
	return s, nil
}

// loadErrors joins every error go/packages reported, in any package of the
// import graph, so that a broken spec never yields a partial model.
func loadErrors(pkgs []*packages.Package) error {
	var msgs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			msgs = append(msgs, e.Error())
		}
	})
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "\n"))
	}
	return nil
}
