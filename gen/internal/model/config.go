package model

import (
	"go/ast"
	"strings"
)

// buildConfig reads a //lock:config struct.
func (b *builder) buildConfig(d typeDecl, st *ast.StructType) {
	pkg := b.api
	n, ds := b.named(pkg, d.spec.Name, d.doc)
	ds.take("config")
	b.done(pkg, d.spec.Pos(), ds)
	c := Config{Named: n}
	fields, fieldTags := b.fields(pkg, st, n.Name, true)
	for i, f := range fields {
		t := fieldTags[i]
		where := n.Name + "." + f.Name
		cf := ConfigField{Named: f.Named, Type: f.Type, Env: t.take("env"), JSON: t.take("json")}
		def := t.take("default")
		if env, ok := strings.CutPrefix(def, "$"); ok {
			cf.DefaultEnv = env
		} else {
			cf.Default = def
		}
		if oneof := t.take("oneof"); oneof != "" {
			cf.OneOf = strings.Fields(oneof)
		}
		if err := t.done(); err != nil {
			b.errorf(pkg, d.spec.Pos(), "%s: %v", where, err)
		}
		if cf.JSON == "" {
			b.errorf(pkg, d.spec.Pos(), "%s: every config field needs a json name (the C ABI reads configs as JSON)", where)
		}
		switch f.Type.Kind {
		case String:
			if len(cf.OneOf) > 0 && cf.Default != "" && !contains(cf.OneOf, cf.Default) {
				b.errorf(pkg, d.spec.Pos(), "%s: default %q is not one of %v", where, cf.Default, cf.OneOf)
			}
		case Declared:
			if def != "" || cf.Env != "" || len(cf.OneOf) > 0 {
				b.errorf(pkg, d.spec.Pos(), "%s: a nested config takes only a json name; its own fields have defaults", where)
			}
		default:
			b.errorf(pkg, d.spec.Pos(), "%s: config fields are strings or nested configs", where)
		}
		c.Fields = append(c.Fields, cf)
	}
	b.m.Configs = append(b.m.Configs, c)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
