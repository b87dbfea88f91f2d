package model

import (
	"go/ast"
	"go/constant"
	"go/types"
	"time"
)

// buildContract reads package spec/driver: constants, interfaces and plain
// structs, all emitted as they are.
func (b *builder) buildContract() {
	pkg := b.contract
	typeDecls, _, order := b.decls(pkg, true)
	byType := map[*ast.TypeSpec]typeDecl{}
	for _, d := range typeDecls {
		byType[d.spec] = d
	}
	for _, sp := range order {
		switch sp := sp.(type) {
		case *ast.ValueSpec:
			b.contractConsts(sp)
		case *ast.TypeSpec:
			d := byType[sp]
			n, ds := b.named(pkg, sp.Name, d.doc)
			b.done(pkg, sp.Pos(), ds)
			switch t := sp.Type.(type) {
			case *ast.InterfaceType:
				it := Interface{Named: n}
				for _, f := range t.Methods.List {
					if len(f.Names) == 0 {
						b.errorf(pkg, f.Pos(), "%s: embedded interfaces are not supported", n.Name)
						continue
					}
					mn, mds := b.named(pkg, f.Names[0], f.Doc)
					b.done(pkg, f.Pos(), mds)
					if m, ok := b.method(pkg, f.Names[0], mn); ok {
						it.Methods = append(it.Methods, m)
					}
				}
				b.m.Contract = append(b.m.Contract, Decl{Kind: InterfaceDecl, Interface: it})
			case *ast.StructType:
				fs, ts := b.fields(pkg, t, n.Name, false)
				for i, f := range fs {
					if err := ts[i].done(); err != nil {
						b.errorf(pkg, sp.Pos(), "%s.%s: %v", n.Name, f.Name, err)
					}
				}
				b.m.Contract = append(b.m.Contract, Decl{Kind: StructDecl, Struct: Struct{Named: n, Fields: fs}})
			default:
				b.errorf(pkg, sp.Pos(), "%s: the contract declares interfaces and structs", n.Name)
			}
		}
	}
}

// contractConsts reads one const spec: integers and durations.
func (b *builder) contractConsts(sp *ast.ValueSpec) {
	pkg := b.contract
	for _, id := range sp.Names {
		n, ds := b.named(pkg, id, sp.Doc)
		b.done(pkg, id.Pos(), ds)
		obj, ok := pkg.TypesInfo.Defs[id].(*types.Const)
		if !ok {
			b.errorf(pkg, id.Pos(), "%s: no constant value", id.Name)
			continue
		}
		v, exact := constant.Int64Val(constant.ToInt(obj.Val()))
		if !exact {
			b.errorf(pkg, id.Pos(), "%s: only integer constants are supported", id.Name)
			continue
		}
		t, err := b.typeOf(obj.Type())
		if err != nil {
			b.errorf(pkg, id.Pos(), "%s: %v", id.Name, err)
			continue
		}
		c := Const{Named: n, Type: t}
		switch t.Kind {
		case Int:
			c.Int = v
		case Duration:
			c.Dur = time.Duration(v)
		default:
			b.errorf(pkg, id.Pos(), "%s: constants are integers or durations", id.Name)
			continue
		}
		b.m.Contract = append(b.m.Contract, Decl{Kind: ConstDecl, Const: c})
	}
}
