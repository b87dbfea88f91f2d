package emitgo

import (
	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// contract emits driver/driver_gen.go: the driver contract as the spec
// declares it, doc comments included. The package doc stays hand-written in
// driver/doc.go.
func (e *emitter) contract() error {
	f := e.newFile(e.l.Driver)
	for i, d := range e.m.Contract {
		if i > 0 {
			f.Line()
		}
		switch d.Kind {
		case model.ConstDecl:
			c := d.Const
			f.Add(doc(c.Doc))
			value := jen.Lit(int(c.Int))
			if c.Type.Kind == model.Duration {
				value = durationExpr(c.Dur)
			}
			f.Const().Id(c.Name).Op("=").Add(value)
		case model.InterfaceDecl:
			it := d.Interface
			f.Add(doc(it.Doc))
			f.Type().Id(it.Name).InterfaceFunc(func(g *jen.Group) {
				for j, m := range it.Methods {
					if j > 0 {
						g.Line()
					}
					g.Add(doc(m.Doc))
					g.Id(m.Name).Add(e.signature(m.Params, m.Results, m.Variadic))
				}
			})
		case model.StructDecl:
			st := d.Struct
			f.Add(doc(st.Doc))
			f.Type().Id(st.Name).StructFunc(func(g *jen.Group) {
				for j, fl := range st.Fields {
					if j > 0 && fl.Doc != "" {
						g.Line()
					}
					e.field(g, fl)
				}
			})
		}
	}
	return e.save(e.l.Driver, "driver_gen.go", f)
}
