package cabi

import (
	"strings"

	"github.com/zerotal/lock/gen/internal/model"
)

// Reflow rewraps doc text to width: each paragraph of plain lines is joined
// and broken again at spaces (C names are longer than the Go ones they
// replace), while paragraphs holding indented or list lines keep their
// lines.
func Reflow(text string, width int) []string {
	var out []string
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			out = append(out, "")
		}
		lines := strings.Split(para, "\n")
		keep := false
		for _, ln := range lines {
			keep = keep || strings.HasPrefix(ln, " ") || strings.HasPrefix(ln, "\t") || strings.HasPrefix(ln, "- ")
		}
		if keep {
			out = append(out, lines...)
			continue
		}
		out = append(out, Wrap(strings.Join(lines, " "), width)...)
	}
	return out
}

// Wrap breaks a line at spaces into lines of at most width bytes where the
// words allow it.
func Wrap(line string, width int) []string {
	var out []string
	line = strings.Join(strings.Fields(line), " ")
	for len(line) > width {
		cut := strings.LastIndexByte(line[:width+1], ' ')
		if cut <= 0 {
			cut = strings.IndexByte(line, ' ')
			if cut < 0 {
				break
			}
		}
		out = append(out, line[:cut])
		line = line[cut+1:]
	}
	return append(out, line)
}

// FieldDoc documents a field of the options struct: the option's doc with
// C names, its default, and what zero means.
func (a *ABI) FieldDoc(f StructField) string {
	names := map[string]string{}
	for _, g := range a.Options.Fields {
		if !g.SetOf {
			names[g.Option.Name] = g.CName
		}
	}
	name := names[f.Option.Name]
	if f.SetOf {
		return "Non-zero when " + name + " is given, so that 0 can be a value of its own; zero means the default (" + f.Option.Default.Text() + ")."
	}
	text := replaceWords(f.Option.Doc, names)
	var notes []string
	switch {
	case f.Option.Type.Kind == model.Bool:
		notes = append(notes, "Non-zero turns it on.")
	case f.Option.Set != "":
		notes = append(notes, "Read only when "+snake(f.Option.Name)+"_set is non-zero.")
	case !f.Option.Default.IsZero():
		notes = append(notes, "0 means the default: "+f.Option.Default.Text()+".")
	}
	for _, imp := range f.Option.Implies {
		notes = append(notes, "Setting it turns on "+names[imp]+".")
	}
	if f.Option.Type.Kind == model.Duration {
		notes = append(notes, "In milliseconds.")
	}
	return text + "\n\n" + strings.Join(notes, " ")
}

// HandleDoc documents a handle type.
func (a *ABI) HandleDoc(h Handle) string {
	return "A " + h.CType + " is a handle on a " + h.Surface + ": made by " + strings.Join(h.MadeBy, " or ") +
		", ended by " + h.FreedBy + "; 0 is never a valid handle.\n\n" + h.Doc
}

// ConfigLines describe the config's JSON members, one line each: its name
// (nested members joined with dots), values, default and environment
// variable.
func (c *Config) ConfigLines() []string {
	var out []string
	var walk func(prefix string, ms []Member)
	walk = func(prefix string, ms []Member) {
		for _, m := range ms {
			if len(m.Members) > 0 {
				walk(prefix+m.JSON+".", m.Members)
				continue
			}
			var facts []string
			if len(m.Field.OneOf) > 0 {
				facts = append(facts, `"`+strings.Join(m.Field.OneOf, `", "`)+`"`)
			}
			switch {
			case m.Field.Default != "":
				facts = append(facts, `default "`+m.Field.Default+`"`)
			case m.Field.DefaultEnv != "":
				facts = append(facts, "default $"+m.Field.DefaultEnv)
			}
			if m.Field.Env != "" {
				facts = append(facts, "environment "+m.Field.Env)
			}
			out = append(out, prefix+m.JSON+": "+strings.Join(facts, "; "))
		}
	}
	walk("", c.Members)
	return out
}
