package model

import (
	"fmt"
	"go/ast"
)

// link resolves the references between declarations, once all are read:
// option types, the types methods mention, the package functions' targets.
func (b *builder) link() {
	b.linkOptions()
	known := map[string]bool{b.m.CodeType.Name: true}
	for _, s := range b.m.Surfaces {
		known[s.Name] = true
	}
	for _, c := range b.m.Configs {
		known[c.Name] = true
	}
	for _, o := range b.m.Options {
		known[o.Option.Name] = true
	}
	for _, g := range b.m.GoTypes {
		known[g.Name] = true
	}
	contract := map[string]bool{}
	for _, d := range b.m.Contract {
		switch d.Kind {
		case InterfaceDecl:
			contract[d.Interface.Name] = true
		case StructDecl:
			contract[d.Struct.Name] = true
		}
	}
	check := func(where string, t Type) {
		b.checkType(where, t, known, contract)
	}
	for _, s := range append([]Surface{b.m.Package}, b.m.Surfaces...) {
		for _, m := range s.Methods {
			for _, p := range append(append([]Param(nil), m.Params...), m.Results...) {
				check(s.Name+"."+m.Name, p.Type)
			}
		}
	}
	for _, c := range b.m.Configs {
		for _, f := range c.Fields {
			if f.Type.Kind == Declared && !b.isConfig(f.Type.Name) {
				b.errs = append(b.errs, fmt.Errorf("%s.%s: %s is not a //lock:config struct", c.Name, f.Name, f.Type.Name))
			}
		}
	}
	for _, d := range b.m.Contract {
		if d.Kind != InterfaceDecl {
			continue
		}
		for _, m := range d.Interface.Methods {
			for _, p := range append(append([]Param(nil), m.Params...), m.Results...) {
				check("driver."+d.Interface.Name+"."+m.Name, p.Type)
			}
		}
	}
	if b.m.ABI != nil {
		for _, m := range b.m.ABI.Methods {
			for _, p := range append(append([]Param(nil), m.Params...), m.Results...) {
				check(b.m.ABI.Name+"."+m.Name, p.Type)
			}
		}
	}
	b.linkPackage()
	b.linkABI()
}

// checkType fails on a Declared type the spec does not declare with a role.
func (b *builder) checkType(where string, t Type, known, contract map[string]bool) {
	switch t.Kind {
	case Declared:
		ok := known[t.Name]
		if t.Scope == ScopeContract {
			ok = contract[t.Name]
		}
		if !ok {
			b.errs = append(b.errs, fmt.Errorf("%s: type %s has no role in the spec", where, t.Name))
		}
	case Func:
		for _, p := range append(append([]Param(nil), t.Params...), t.Results...) {
			b.checkType(where, p.Type, known, contract)
		}
	case Chan, Pointer:
		b.checkType(where, *t.Elem, known, contract)
	}
}

// linkOptions gives each option set its option type, an empty struct
// declared for its name and doc.
func (b *builder) linkOptions() {
	for i := range b.m.Options {
		o := &b.m.Options[i]
		d, ok := b.optionDecl[o.Option.Name]
		if !ok {
			b.errs = append(b.errs, fmt.Errorf("%s: //lock:options names %q, which is not declared as an empty struct", o.Name, o.Option.Name))
			continue
		}
		delete(b.optionDecl, o.Option.Name)
		if st := d.spec.Type.(*ast.StructType); len(st.Fields.List) > 0 {
			b.errorf(b.api, d.spec.Pos(), "%s: an option type is declared as struct{}; its fields are generated", o.Option.Name)
		}
		n, ds := b.named(b.api, d.spec.Name, d.doc)
		b.done(b.api, d.spec.Pos(), ds)
		o.Option = n
	}
	for _, o := range b.m.Options {
		for _, f := range o.Fields {
			if f.Type.Kind == Declared && !b.isGoType(f.Type.Name) {
				b.errs = append(b.errs, fmt.Errorf("%s.%s: an option of a declared type needs a //lock:go type, and %s is not one", o.Name, f.Name, f.Type.Name))
			}
		}
	}
	for name, d := range b.optionDecl {
		b.errorf(b.api, d.spec.Pos(), "%s: declared with no role (not an option type, config, error or table)", name)
	}
}

// linkPackage checks the package functions against what they stand on.
func (b *builder) linkPackage() {
	var def *Method
	for i, m := range b.m.Package.Methods {
		if m.Name == "Default" {
			def = &b.m.Package.Methods[i]
		}
	}
	for _, m := range b.m.Package.Methods {
		switch m.Kind {
		case OnDefault:
			if def == nil || len(def.Results) != 1 || def.Results[0].Type.Kind != Declared {
				b.errs = append(b.errs, fmt.Errorf("%s: //lock:default needs a Default() function returning a surface", m.Name))
				continue
			}
			target := b.surface(def.Results[0].Type.Name)
			if target == nil || !hasSameMethod(target, m) {
				b.errs = append(b.errs, fmt.Errorf("%s: //lock:default needs %s.%s with the same signature", m.Name, def.Results[0].Type.Name, m.Name))
			}
		case FromEnv:
			if !b.isConfig(m.Config) || len(m.Params) != 0 || len(m.Results) != 1 || m.Results[0].Type.Name != m.Config {
				b.errs = append(b.errs, fmt.Errorf("%s: //lock:env %s wants a //lock:config struct and the signature () %s", m.Name, m.Config, m.Config))
			}
		}
	}
}

func (b *builder) surface(name string) *Surface {
	for i := range b.m.Surfaces {
		if b.m.Surfaces[i].Name == name {
			return &b.m.Surfaces[i]
		}
	}
	return nil
}

func (b *builder) isConfig(name string) bool {
	for _, c := range b.m.Configs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// hasSameMethod reports whether s has a method named like m with the same
// parameter and result types.
func hasSameMethod(s *Surface, m Method) bool {
	for _, sm := range s.Methods {
		if sm.Name == m.Name {
			return sm.Variadic == m.Variadic && sameParams(sm.Params, m.Params) && sameParams(sm.Results, m.Results)
		}
	}
	return false
}

func sameParams(a, b []Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Type.Equal(b[i].Type) {
			return false
		}
	}
	return true
}
