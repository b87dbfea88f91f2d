package model

import (
	"go/ast"
)

// buildEnum reads a //lock:enum T table: one field of type T per value, with
// tags value (its number) and text (the value in words). The table itself is
// not emitted; T and its constants are.
func (b *builder) buildEnum(d typeDecl, types map[string]Named) {
	pkg := b.api
	table := d.spec.Name.Name
	_, ds := b.named(pkg, d.spec.Name, d.doc)
	name, _ := ds.take("enum")
	b.done(pkg, d.spec.Pos(), ds)
	n, ok := types[name]
	if !ok {
		b.errorf(pkg, d.spec.Pos(), "%s: //lock:enum %s names no int type of the spec", table, name)
		return
	}
	delete(types, name)
	e := Enum{Named: n}
	fields, tags := b.fields(pkg, d.spec.Type.(*ast.StructType), table, true)
	for i, f := range fields {
		where := table + "." + f.Name
		if f.Type.Kind != Declared || f.Type.Name != name {
			b.errorf(pkg, d.spec.Pos(), "%s: must have type %s", where, name)
		}
		v := EnumValue{Named: f.Named, Text: tags[i].take("text")}
		var err error
		if v.Value, err = tags[i].takeIntRequired("value"); err != nil {
			b.errorf(pkg, d.spec.Pos(), "%s: %v", where, err)
		}
		if err := tags[i].done(); err != nil {
			b.errorf(pkg, d.spec.Pos(), "%s: %v", where, err)
		}
		switch {
		case v.Text == "":
			b.errorf(pkg, d.spec.Pos(), "%s: needs a text tag", where)
		case v.Value <= 0:
			b.errorf(pkg, d.spec.Pos(), "%s: values start at 1 (0 means not set)", where)
		case i > 0 && v.Value <= e.Values[i-1].Value:
			b.errorf(pkg, d.spec.Pos(), "%s: values must increase: %d after %d", where, v.Value, e.Values[i-1].Value)
		}
		e.Values = append(e.Values, v)
	}
	b.m.Enums = append(b.m.Enums, e)
}
