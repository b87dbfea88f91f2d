package emitgo

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// config emits sdk/go/config_gen.go: the config structs, ConfigFromEnv, and
// the unexported withDefaults and validate that Open applies.
func (e *emitter) config() error {
	f := e.newFile(e.l.SDK)
	for i, c := range e.m.Configs {
		if i > 0 {
			f.Line()
		}
		f.Add(doc(c.Doc))
		f.Type().Id(c.Name).StructFunc(func(g *jen.Group) {
			for j, fl := range c.Fields {
				if j > 0 {
					g.Line()
				}
				g.Add(doc(paragraphs(fl.Doc, configFieldNote(fl))))
				g.Id(fl.Name).Add(e.goType(fl.Type)).Tag(map[string]string{"json": fl.JSON})
			}
		})
	}
	for _, m := range e.m.Package.Methods {
		if m.Kind == model.FromEnv {
			e.fromEnv(f, m)
		}
	}
	for _, c := range e.m.Configs {
		e.withDefaults(f, c)
	}
	for _, c := range e.m.Configs {
		if err := e.validate(f, c); err != nil {
			return err
		}
	}
	return e.save(e.l.SDK, "config_gen.go", f)
}

// configFieldNote says where a field's default and environment variable
// come from, from the spec's tags.
func configFieldNote(fl model.ConfigField) string {
	var parts []string
	switch {
	case fl.Default != "":
		parts = append(parts, fmt.Sprintf("Default: %q.", fl.Default))
	case fl.DefaultEnv != "":
		parts = append(parts, fmt.Sprintf("Default: the value of %s.", fl.DefaultEnv))
	}
	if fl.Env != "" {
		parts = append(parts, fmt.Sprintf("Environment: %s.", fl.Env))
	}
	return strings.Join(parts, " ")
}

// configByName finds a config struct.
func (e *emitter) configByName(name string) *model.Config {
	for i := range e.m.Configs {
		if e.m.Configs[i].Name == name {
			return &e.m.Configs[i]
		}
	}
	return nil
}

// envField is a config field read from the environment, by its path.
type envField struct {
	path []string
	env  string
}

// envFields lists the fields of c, nested ones included, that have an
// environment variable.
func (e *emitter) envFields(c *model.Config, prefix []string) []envField {
	var out []envField
	for _, fl := range c.Fields {
		p := append(append([]string(nil), prefix...), fl.Name)
		if fl.Type.Kind == model.Declared {
			out = append(out, e.envFields(e.configByName(fl.Type.Name), p)...)
			continue
		}
		if fl.Env != "" {
			out = append(out, envField{p, fl.Env})
		}
	}
	return out
}

// fromEnv emits ConfigFromEnv.
func (e *emitter) fromEnv(f *jen.File, m model.Method) {
	c := e.configByName(m.Config)
	fields := e.envFields(c, nil)
	var read []string
	for _, ef := range fields {
		read = append(read, fmt.Sprintf("%s (%s)", ef.env, strings.Join(ef.path, ".")))
	}
	note := ""
	if len(read) > 0 {
		note = "It reads " + andList(read) + "."
	}
	f.Line()
	f.Add(doc(paragraphs(m.Doc, note)))
	f.Func().Id(m.Name).Params().Id(c.Name).BlockFunc(func(g *jen.Group) {
		g.Var().Id("c").Id(c.Name)
		for _, ef := range fields {
			g.Id("c").Dot(strings.Join(ef.path, ".")).Op("=").Qual("os", "Getenv").Call(jen.Lit(ef.env))
		}
		if e.hasDefaults(c) {
			g.Return(jen.Id("c").Dot("withDefaults").Call())
		} else {
			g.Return(jen.Id("c"))
		}
	})
}

// hasDefaults reports whether c, or a config nested in it, has a default.
func (e *emitter) hasDefaults(c *model.Config) bool {
	for _, fl := range c.Fields {
		if fl.Default != "" || fl.DefaultEnv != "" {
			return true
		}
		if fl.Type.Kind == model.Declared && e.hasDefaults(e.configByName(fl.Type.Name)) {
			return true
		}
	}
	return false
}

// withDefaults emits c's withDefaults, if it has defaults.
func (e *emitter) withDefaults(f *jen.File, c model.Config) {
	if !e.hasDefaults(&c) {
		return
	}
	f.Line()
	f.Add(doc("withDefaults returns c with every empty field set to its default."))
	f.Func().Params(jen.Id("c").Id(c.Name)).Id("withDefaults").Params().Id(c.Name).BlockFunc(func(g *jen.Group) {
		for _, fl := range c.Fields {
			field := jen.Id("c").Dot(fl.Name)
			switch {
			case fl.Type.Kind == model.Declared:
				if e.hasDefaults(e.configByName(fl.Type.Name)) {
					g.Add(field.Clone().Op("=").Add(field.Clone()).Dot("withDefaults").Call())
				}
			case fl.Default != "":
				g.If(field.Clone().Op("==").Lit("")).Block(field.Clone().Op("=").Lit(fl.Default))
			case fl.DefaultEnv != "":
				g.If(field.Clone().Op("==").Lit("")).Block(field.Clone().Op("=").Qual("os", "Getenv").Call(jen.Lit(fl.DefaultEnv)))
			}
		}
		g.Return(jen.Id("c"))
	})
}

// validate emits, for a config with enumerated fields, the list of values
// of each and a validate method that names the field and the valid values.
func (e *emitter) validate(f *jen.File, c model.Config) error {
	var enums []model.ConfigField
	for _, fl := range c.Fields {
		if len(fl.OneOf) > 0 {
			enums = append(enums, fl)
		}
	}
	if len(enums) == 0 {
		return nil
	}
	checks := make([]jen.Code, 0, len(enums)+1)
	for _, fl := range enums {
		bad, err := e.inputError(c.Name+"."+fl.Name, jen.Qual("fmt", "Sprintf").Call(jen.Lit("%q is not one of "+strings.Join(fl.OneOf, ", ")), jen.Id("c").Dot(fl.Name)))
		if err != nil {
			return err
		}
		checks = append(checks, jen.If(jen.Op("!").Qual("slices", "Contains").Call(jen.Id(valuesVar(c, fl)), jen.Id("c").Dot(fl.Name))).Block(jen.Return(bad)))
	}
	for _, fl := range enums {
		f.Line()
		f.Add(doc(fmt.Sprintf("%s lists the values %s.%s accepts.", valuesVar(c, fl), c.Name, fl.Name)))
		vals := make([]jen.Code, len(fl.OneOf))
		for i, v := range fl.OneOf {
			vals[i] = jen.Lit(v)
		}
		f.Var().Id(valuesVar(c, fl)).Op("=").Index().String().Values(vals...)
	}
	f.Line()
	in, _ := e.m.InputError() // inputError above has made sure there is one
	f.Add(doc(fmt.Sprintf("validate reports the first field of c that holds a value it does not accept, as an *%s naming the field and the valid values.", in.Name)))
	f.Func().Params(jen.Id("c").Id(c.Name)).Id("validate").Params().Error().Block(append(checks, jen.Return(jen.Nil()))...)
	return nil
}

// valuesVar names the list of values of an enumerated field: configDriverValues.
func valuesVar(c model.Config, fl model.ConfigField) string {
	return lowerFirst(c.Name) + fl.Name + "Values"
}

// andList joins items as prose: "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
