package emitgo

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// options emits sdk/go/options_gen.go. An option is a small value (a kind
// and one payload field per payload type), never a closure, so passing
// options allocates nothing and applying them is a switch into a struct on
// the stack: the uncontended Try path stays cheap.
func (e *emitter) options() error {
	f := e.newFile(e.l.SDK)
	for i, o := range e.m.Options {
		if i > 0 {
			f.Line()
		}
		e.optionSet(f, o)
	}
	return e.save(e.l.SDK, "options_gen.go", f)
}

// payload is the field of an option value that carries fl's setting: one
// shared per payload type for durations and strings, one of its own for a
// Go-only option; "" for booleans, which carry nothing.
func payload(fl model.OptionField) string {
	switch fl.Type.Kind {
	case model.Duration:
		return "d"
	case model.String:
		return "s"
	case model.Bool:
		return ""
	}
	return lowerFirst(fl.Name)
}

func (e *emitter) optionSet(f *jen.File, o model.OptionSet) {
	opt := o.Option.Name
	kindType := lowerFirst(opt) + "Kind"
	kindConst := func(fl model.OptionField) string { return lowerFirst(opt) + fl.Name }

	// The option type: a kind and the payloads its settings need.
	seen := map[string]bool{}
	f.Add(doc(o.Option.Doc))
	f.Type().Id(opt).StructFunc(func(g *jen.Group) {
		g.Id("kind").Id(kindType)
		for _, fl := range o.Fields {
			if p := payload(fl); p != "" && !seen[p] {
				seen[p] = true
				g.Id(p).Add(e.goType(fl.Type))
			}
		}
	})
	f.Line()
	f.Add(doc(fmt.Sprintf("%s says which setting %s carries; 0 is none.", kindType, article(opt))))
	f.Type().Id(kindType).Uint8()
	f.Line()
	f.Const().DefsFunc(func(g *jen.Group) {
		for i, fl := range o.Fields {
			if i == 0 {
				g.Id(kindConst(fl)).Id(kindType).Op("=").Iota().Op("+").Lit(1)
			} else {
				g.Id(kindConst(fl))
			}
		}
	})

	// One constructor per setting.
	for _, fl := range o.Fields {
		f.Line()
		f.Add(doc(paragraphs(constructorDoc(o, fl), fl.Doc)))
		value := []jen.Code{jen.Id("kind").Op(":").Id(kindConst(fl))}
		params := []jen.Code{}
		if p := payload(fl); p != "" {
			arg := "d"
			if fl.Type.Kind != model.Duration {
				arg = lowerFirst(fl.Name)
			}
			params = append(params, jen.Id(arg).Add(e.goType(fl.Type)))
			value = append(value, jen.Id(p).Op(":").Id(arg))
		}
		f.Func().Id(fl.Constructor()).Params(params...).Id(opt).Block(
			jen.Return(jen.Id(opt).Values(value...)),
		)
	}

	// Applying them: into the hand-written struct the engine resolves
	// against the TTL, or into a generated one that starts from the
	// defaults.
	target := jen.Id(o.Into)
	apply := applyFunc(o)
	var init jen.Code = jen.Var().Id("o").Add(target.Clone())
	name := func(fl model.OptionField) string { return fl.Name }
	if o.Into == "" {
		local := lowerFirst(o.Name)
		target = jen.Id(local)
		name = func(fl model.OptionField) string { return lowerFirst(fl.Name) }
		f.Line()
		f.Add(doc(fmt.Sprintf("%s holds the settings of %s values, applied over the defaults.", local, opt)))
		f.Type().Id(local).StructFunc(func(g *jen.Group) {
			for _, fl := range o.Fields {
				g.Id(name(fl)).Add(e.goType(fl.Type))
			}
		})
		var defaults []jen.Code
		for _, fl := range o.Fields {
			if !fl.Default.IsZero() {
				value := jen.Lit(fl.Default.Literal)
				if fl.Type.Kind == model.Duration {
					value = durationExpr(fl.Default.Duration)
				}
				defaults = append(defaults, jen.Id(name(fl)).Op(":").Add(value))
			}
		}
		init = jen.Id("o").Op(":=").Id(local).Values(defaults...)
	}
	f.Line()
	joined := ""
	for _, fl := range o.Fields {
		if fl.Join != "" {
			joined += fmt.Sprintf(" (%s joins repeated %s values)", fl.Join, fl.Constructor())
		}
	}
	f.Add(doc(fmt.Sprintf("%s applies opts in order, so a later option overrides an earlier one%s; the zero %s is skipped.", apply, joined, opt)))
	f.Func().Id(apply).Params(jen.Id("opts").Index().Id(opt)).Add(target.Clone()).Block(
		init,
		jen.For(jen.List(jen.Id("_"), jen.Id("opt")).Op(":=").Range().Id("opts")).Block(
			jen.Switch(jen.Id("opt").Dot("kind")).BlockFunc(func(g *jen.Group) {
				for _, fl := range o.Fields {
					var lhs, rhs []jen.Code
					if p := payload(fl); p != "" && fl.Join != "" {
						lhs, rhs = append(lhs, jen.Id("o").Dot(name(fl))), append(rhs, jen.Id(fl.Join).Call(jen.Id("o").Dot(name(fl)), jen.Id("opt").Dot(p)))
					} else if p != "" {
						lhs, rhs = append(lhs, jen.Id("o").Dot(name(fl))), append(rhs, jen.Id("opt").Dot(p))
					} else {
						lhs, rhs = append(lhs, jen.Id("o").Dot(name(fl))), append(rhs, jen.True())
					}
					if fl.Set != "" {
						lhs, rhs = append(lhs, jen.Id("o").Dot(fl.Set)), append(rhs, jen.True())
					}
					for _, imp := range fl.Implies {
						lhs, rhs = append(lhs, jen.Id("o").Dot(name(model.OptionField{Named: model.Named{Name: imp}}))), append(rhs, jen.True())
					}
					g.Case(jen.Id(kindConst(fl))).List(lhs...).Op("=").List(rhs...)
				}
			}),
		),
		jen.Return(jen.Id("o")),
	)
}

// constructorDoc is the lead sentence of an option constructor's doc.
func constructorDoc(o model.OptionSet, fl model.OptionField) string {
	what := fmt.Sprintf("sets %s", fl.Name)
	if fl.Type.Kind == model.Bool {
		what = fmt.Sprintf("turns %s on", fl.Name)
	}
	if fl.Join != "" {
		what = fmt.Sprintf("adds to %s", fl.Name)
	}
	for _, imp := range fl.Implies {
		what += fmt.Sprintf(" and turns %s on", imp)
	}
	s := fmt.Sprintf("%s returns %s that %s.", fl.Constructor(), article(o.Option.Name), what)
	if !fl.Default.IsZero() {
		s += fmt.Sprintf(" The default is %s.", fl.Default.Text())
	}
	return s
}

// article prefixes a noun with "a" or "an".
func article(noun string) string {
	if noun != "" && strings.ContainsRune("AEIOUaeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// applyFunc names the function that turns a slice of o's option values into
// the struct they fill: newOptions for options, newManagerOptions for a
// generated struct.
func applyFunc(o model.OptionSet) string {
	if o.Into != "" {
		return "new" + strings.ToUpper(o.Into[:1]) + o.Into[1:]
	}
	return "new" + o.Name
}
