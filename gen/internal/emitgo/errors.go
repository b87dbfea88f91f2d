package emitgo

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// codeConst is the Go name of a code: CodeNotAcquired.
func (e *emitter) codeConst(c string) string { return e.m.CodeType.Name + c }

// codeDoc is a code's doc on its Go constant.
func (e *emitter) codeDoc(c model.Code) string {
	return rename(c.Doc, c.Name, e.codeConst(c.Name))
}

// sentinelDoc is the doc of a sentinel error.
func (e *emitter) sentinelDoc(c model.Code) string {
	first := fmt.Sprintf("%s is the sentinel error of [%s], matched with errors.Is.", c.Sentinel, e.codeConst(c.Name))
	if c.Error != "" {
		first = fmt.Sprintf("%s is the sentinel error of [%s], matched with errors.Is: every [*%s] matches it.", c.Sentinel, e.codeConst(c.Name), c.Error)
	}
	return paragraphs(first, e.codeDoc(c))
}

// codeOfDoc documents the spec's CodeOf, adding the precedence the table
// gives, so the doc always lists the real order.
func (e *emitter) codeOfDoc(f model.Method) string {
	byRank := map[int][]string{}
	var ranks []int
	fallback := ""
	for _, c := range e.m.Codes {
		if c.Fallback {
			fallback = e.codeConst(c.Name)
		}
		if c.Rank == 0 {
			continue
		}
		if _, seen := byRank[c.Rank]; !seen {
			ranks = append(ranks, c.Rank)
		}
		byRank[c.Rank] = append(byRank[c.Rank], e.codeConst(c.Name))
	}
	sort.Ints(ranks)
	var order []string
	for _, r := range ranks {
		order = append(order, strings.Join(byRank[r], ", "))
	}
	return paragraphs(
		f.Doc,
		fmt.Sprintf("%s looks through the whole error tree (Unwrap, errors.Join) for errors with a code and picks by precedence, highest first, the outermost error among equals:", f.Name),
		"\t"+strings.Join(order, "\n\t"),
		fmt.Sprintf("An error with none of them gives %s.", fallback),
	)
}

// rankNone is above every rank: "no code found yet".
func (e *emitter) rankNone() int {
	r := 0
	for _, c := range e.m.Codes {
		r = max(r, c.Rank)
	}
	return r + 1
}

// errors emits sdk/go/errors_gen.go: the Code type and constants, the
// sentinels, the typed errors and CodeOf.
func (e *emitter) errors() error {
	f := e.newFile(e.l.SDK)
	code := e.m.CodeType.Name

	f.Add(doc(e.m.CodeType.Doc))
	f.Type().Id(code).Int()
	f.Line()

	f.Add(doc("The error codes. Their numbers are part of the public contract: a code never changes meaning once published."))
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, c := range e.m.Codes {
			g.Add(doc(e.codeDoc(c)))
			g.Id(e.codeConst(c.Name)).Id(code).Op("=").Lit(c.Value)
		}
	})
	f.Line()

	f.Add(doc("The sentinel errors, matched with errors.Is."))
	f.Var().DefsFunc(func(g *jen.Group) {
		for _, c := range e.m.Codes {
			if c.Sentinel != "" {
				g.Add(doc(e.sentinelDoc(c)))
				g.Id(c.Sentinel).Op("=").Qual("errors", "New").Call(jen.Lit(c.Message))
			}
		}
	})

	e.codeMethods(f)
	for _, en := range e.m.Enums {
		enum(f, en)
	}
	for _, et := range e.m.Errors {
		if err := e.errorType(f, et); err != nil {
			return err
		}
	}
	if fn, ok := e.m.PackageFunc(model.ClassifyErr); ok {
		e.codeOf(f, fn)
	}
	return e.save(e.l.SDK, "errors_gen.go", f)
}

// codeMethods emits Code.String and Code.HTTPStatus.
func (e *emitter) codeMethods(f *jen.File) {
	code := e.m.CodeType.Name
	f.Line()
	f.Add(doc(fmt.Sprintf("String returns the code's name, such as %q.", e.m.Codes[1].Name)))
	f.Func().Params(jen.Id("c").Id(code)).Id("String").Params().String().Block(
		jen.Switch(jen.Id("c")).BlockFunc(func(g *jen.Group) {
			for _, c := range e.m.Codes {
				g.Case(jen.Id(e.codeConst(c.Name))).Return(jen.Lit(c.Name))
			}
		}),
		jen.Return(jen.Lit(code+"(").Op("+").Qual("strconv", "Itoa").Call(jen.Int().Call(jen.Id("c"))).Op("+").Lit(")")),
	)

	// Group codes by status so the switch reads as the table does.
	var statuses []int
	byStatus := map[int][]jen.Code{}
	for _, c := range e.m.Codes {
		if _, seen := byStatus[c.HTTP]; !seen {
			statuses = append(statuses, c.HTTP)
		}
		byStatus[c.HTTP] = append(byStatus[c.HTTP], jen.Id(e.codeConst(c.Name)))
	}
	f.Line()
	f.Add(doc("HTTPStatus returns the HTTP status a server should answer with for an error with this code; 500 for a code it does not know."))
	f.Func().Params(jen.Id("c").Id(code)).Id("HTTPStatus").Params().Int().Block(
		jen.Switch(jen.Id("c")).BlockFunc(func(g *jen.Group) {
			for _, s := range statuses {
				g.Case(byStatus[s]...).Return(jen.Lit(s))
			}
		}),
		jen.Return(jen.Lit(500)),
	)
}

// errorType emits one typed error and its methods.
func (e *emitter) errorType(f *jen.File, et model.ErrorType) error {
	var c model.Code
	for _, x := range e.m.Codes {
		if x.Name == et.Code {
			c = x
		}
	}
	r := "e"
	recv := jen.Id(r).Op("*").Id(et.Name)
	f.Line()
	f.Add(doc(et.Doc))
	f.Type().Id(et.Name).StructFunc(func(g *jen.Group) {
		for _, fl := range et.Fields {
			e.field(g, fl)
		}
	})

	body, err := e.errorMessage(r, et)
	if err != nil {
		return err
	}
	f.Line()
	msgDoc := fmt.Sprintf("Error returns the message: %s.", exampleMessage(et))
	for _, p := range et.Format {
		if p.Guard != "" {
			msgDoc = fmt.Sprintf("Error returns the message: %s, with the bracketed parts only when their field is set.", exampleMessage(et))
			break
		}
	}
	f.Add(doc(msgDoc))
	f.Func().Params(recv.Clone()).Id("Error").Params().String().Block(body...)

	if c.Sentinel != "" {
		f.Line()
		f.Add(doc(fmt.Sprintf("Is reports whether target is %s, so that errors.Is(err, %s) holds for every *%s.", c.Sentinel, c.Sentinel, et.Name)))
		f.Func().Params(recv.Clone()).Id("Is").Params(jen.Id("target").Error()).Bool().Block(
			jen.Return(jen.Id("target").Op("==").Id(c.Sentinel)),
		)
	}
	if et.Unwrap != "" {
		f.Line()
		f.Add(doc(fmt.Sprintf("Unwrap returns %s, for errors.Is and errors.As.", et.Unwrap)))
		f.Func().Params(recv.Clone()).Id("Unwrap").Params().Error().Block(
			jen.Return(jen.Id(r).Dot(et.Unwrap)),
		)
	}
	f.Line()
	f.Add(doc(fmt.Sprintf("Code returns %s.", e.codeConst(c.Name))))
	f.Func().Params(recv.Clone()).Id("Code").Params().Id(e.m.CodeType.Name).Block(
		jen.Return(jen.Id(e.codeConst(c.Name))),
	)
	f.Line()
	f.Add(doc(fmt.Sprintf("HTTPStatus returns %d, the HTTP status of %s.", c.HTTP, e.codeConst(c.Name))))
	f.Func().Params(recv.Clone()).Id("HTTPStatus").Params().Int().Block(
		jen.Return(jen.Lit(c.HTTP)),
	)
	return nil
}

// field emits a struct field with its doc and trailing comment.
func (e *emitter) field(g *jen.Group, fl model.Field) {
	if fl.Doc != "" {
		g.Add(doc(fl.Doc))
	}
	s := g.Id(fl.Name).Add(e.goType(fl.Type))
	if fl.Comment != "" {
		s.Comment(fl.Comment)
	}
}

// errorMessage emits the body of Error(): runs of unguarded pieces become
// one fmt.Sprintf, each guarded group an if that appends to the message.
func (e *emitter) errorMessage(r string, et model.ErrorType) ([]jen.Code, error) {
	kinds := map[string]model.Kind{}
	for _, fl := range et.Fields {
		kinds[fl.Name] = fl.Type.Kind
	}
	type run struct {
		guard  string
		format strings.Builder
		args   []jen.Code
	}
	var runs []*run
	for _, p := range et.Format {
		if len(runs) == 0 || runs[len(runs)-1].guard != p.Guard {
			runs = append(runs, &run{guard: p.Guard})
		}
		cur := runs[len(runs)-1]
		switch {
		case p.Field == "":
			cur.format.WriteString(strings.ReplaceAll(p.Text, "%", "%%"))
		case p.Quote:
			cur.format.WriteString("%q")
			cur.args = append(cur.args, jen.Id(r).Dot(p.Field))
		case kinds[p.Field] == model.String:
			cur.format.WriteString("%s")
			cur.args = append(cur.args, jen.Id(r).Dot(p.Field))
		case kinds[p.Field] == model.Time:
			// %v would print the monotonic clock reading too.
			cur.format.WriteString("%s")
			cur.args = append(cur.args, jen.Id(r).Dot(p.Field).Dot("Format").Call(jen.Lit("2006-01-02T15:04:05.000Z07:00")))
		default:
			cur.format.WriteString("%v")
			cur.args = append(cur.args, jen.Id(r).Dot(p.Field))
		}
	}
	expr := func(x *run) *jen.Statement {
		if len(x.args) == 0 {
			return jen.Lit(x.format.String())
		}
		return jen.Qual("fmt", "Sprintf").Call(append([]jen.Code{jen.Lit(x.format.String())}, x.args...)...)
	}
	if len(runs) == 1 && runs[0].guard == "" {
		return []jen.Code{jen.Return(expr(runs[0]))}, nil
	}
	var body []jen.Code
	for i, x := range runs {
		switch {
		case i == 0 && x.guard == "":
			body = append(body, jen.Id("msg").Op(":=").Add(expr(x)))
		case i == 0:
			return nil, fmt.Errorf("emitgo: %s: the message must start with unguarded text", et.Name)
		case x.guard == "":
			body = append(body, jen.Id("msg").Op("+=").Add(expr(x)))
		default:
			body = append(body, jen.If(nonZero(jen.Id(r).Dot(x.guard), kinds[x.guard])).Block(
				jen.Id("msg").Op("+=").Add(expr(x)),
			))
		}
	}
	return append(body, jen.Return(jen.Id("msg"))), nil
}

// exampleMessage shows a message template in a doc comment, with its
// optional groups in brackets.
func exampleMessage(et model.ErrorType) string {
	var b strings.Builder
	ps := et.Format
	for i, p := range ps {
		if p.Guard != "" && (i == 0 || ps[i-1].Guard != p.Guard) {
			b.WriteString("[")
		}
		switch {
		case p.Field == "":
			b.WriteString(p.Text)
		case p.Quote:
			b.WriteString(`"<` + p.Field + `>"`)
		default:
			b.WriteString("<" + p.Field + ">")
		}
		if p.Guard != "" && (i == len(ps)-1 || ps[i+1].Guard != p.Guard) {
			b.WriteString("]")
		}
	}
	return b.String()
}

// codeOf emits CodeOf and its helpers.
func (e *emitter) codeOf(f *jen.File, fn model.Method) {
	code := e.m.CodeType.Name
	var fallback model.Code
	for _, c := range e.m.Codes {
		if c.Fallback {
			fallback = c
		}
	}
	f.Line()
	f.Add(doc(fmt.Sprintf("rankNone is above every rank in %s's precedence: no code found yet.", fn.Name)))
	f.Const().Id("rankNone").Op("=").Lit(e.rankNone())

	f.Line()
	f.Add(doc(e.codeOfDoc(fn)))
	f.Func().Id(fn.Name).Params(jen.Id(fn.Params[0].Name).Error()).Id(code).Block(
		jen.If(jen.Id(fn.Params[0].Name).Op("==").Nil()).Block(jen.Return(jen.Id(e.codeConst(e.m.Codes[0].Name)))),
		jen.List(jen.Id("c"), jen.Id("_")).Op(":=").Id("classify").Call(jen.Id(fn.Params[0].Name), jen.Id(e.codeConst(fallback.Name)), jen.Id("rankNone")),
		jen.Return(jen.Id("c")),
	)

	f.Line()
	f.Add(doc("classify walks err's tree and returns the code of lowest rank in it, the outermost among equals; best and rank are what the walk has found so far."))
	f.Func().Id("classify").Params(jen.Id("err").Error(), jen.Id("best").Id(code), jen.Id("rank").Int()).Params(jen.Id(code), jen.Int()).Block(
		jen.If(jen.List(jen.Id("c"), jen.Id("r")).Op(":=").Id("codeAt").Call(jen.Id("err")), jen.Id("r").Op(">").Lit(0).Op("&&").Id("r").Op("<").Id("rank")).Block(
			jen.List(jen.Id("best"), jen.Id("rank")).Op("=").List(jen.Id("c"), jen.Id("r")),
		),
		jen.Switch(jen.Id("u").Op(":=").Id("err").Assert(jen.Type())).Block(
			jen.Case(jen.Interface(jen.Id("Unwrap").Params().Error())).Block(
				jen.If(jen.Id("inner").Op(":=").Id("u").Dot("Unwrap").Call(), jen.Id("inner").Op("!=").Nil()).Block(
					jen.List(jen.Id("best"), jen.Id("rank")).Op("=").Id("classify").Call(jen.Id("inner"), jen.Id("best"), jen.Id("rank")),
				),
			),
			jen.Case(jen.Interface(jen.Id("Unwrap").Params().Index().Error())).Block(
				jen.For(jen.List(jen.Id("_"), jen.Id("inner")).Op(":=").Range().Id("u").Dot("Unwrap").Call()).Block(
					jen.If(jen.Id("inner").Op("!=").Nil()).Block(
						jen.List(jen.Id("best"), jen.Id("rank")).Op("=").Id("classify").Call(jen.Id("inner"), jen.Id("best"), jen.Id("rank")),
					),
				),
			),
		),
		jen.Return(jen.Id("best"), jen.Id("rank")),
	)

	f.Line()
	f.Add(doc("codeAt returns the code and rank of err itself, without looking inside it; rank 0 means it has none."))
	f.Func().Id("codeAt").Params(jen.Id("err").Error()).Params(jen.Id(code), jen.Int()).Block(
		jen.Switch(jen.Id("err")).BlockFunc(func(g *jen.Group) {
			for _, c := range e.m.Codes {
				switch {
				case c.Sentinel != "":
					g.Case(jen.Id(c.Sentinel)).Return(jen.Id(e.codeConst(c.Name)), jen.Lit(c.Rank))
				case c.Is != nil:
					g.Case(jen.Qual(c.Is.Path, c.Is.Name)).Return(jen.Id(e.codeConst(c.Name)), jen.Lit(c.Rank))
				}
			}
		}),
		jen.Switch(jen.Id("err").Assert(jen.Type())).BlockFunc(func(g *jen.Group) {
			for _, c := range e.m.Codes {
				if c.Error != "" {
					g.Case(jen.Op("*").Id(c.Error)).Return(jen.Id(e.codeConst(c.Name)), jen.Lit(c.Rank))
				}
			}
		}),
		jen.Return(jen.Id(e.codeConst(e.m.Codes[0].Name)), jen.Lit(0)),
	)
}

// enum emits an enum type, its constants and its String method.
func enum(f *jen.File, en model.Enum) {
	f.Line()
	f.Add(doc(en.Doc))
	f.Type().Id(en.Name).Int()
	f.Line()
	f.Add(doc("The values of " + en.Name + "."))
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, v := range en.Values {
			g.Add(doc(v.Doc))
			g.Id(v.Name).Id(en.Name).Op("=").Lit(v.Value)
		}
	})
	f.Line()
	f.Add(doc("String returns the value in words."))
	f.Func().Params(jen.Id("r").Id(en.Name)).Id("String").Params().String().Block(
		jen.Switch(jen.Id("r")).BlockFunc(func(g *jen.Group) {
			for _, v := range en.Values {
				g.Case(jen.Id(v.Name)).Block(jen.Return(jen.Lit(v.Text)))
			}
		}),
		jen.Return(jen.Qual("fmt", "Sprintf").Call(jen.Lit(en.Name+"(%d)"), jen.Id("int").Call(jen.Id("r")))),
	)
}
