package cabi

import (
	"fmt"
	"strings"

	"github.com/zerotal/lock/gen/internal/model"
)

// translateDocs turns the Go names in each function's doc into the C names
// a C reader sees (Acquire → zl_acquire, *NotAcquiredError → ZL_NOT_ACQUIRED,
// WithTimeout → timeout_ms) and describes every parameter.
func (l *lowerer) translateDocs() {
	codes := map[string]string{}
	for _, c := range l.a.Codes {
		if c.Error != "" {
			codes["*"+c.Error] = c.CName
			codes[c.Error] = c.CName
		}
		if c.Sentinel != "" {
			codes[c.Sentinel] = c.CName
		}
	}
	// Method names that stand for one C function wherever they appear.
	unique := map[string]string{}
	seen := map[string]int{}
	for _, f := range l.a.Funcs {
		seen[f.Method.Name]++
		unique[f.Method.Name] = f.Name
	}
	for name, n := range seen {
		if n > 1 {
			delete(unique, name)
		}
	}
	global := merge(codes, unique)
	for i := range l.a.Codes {
		c := &l.a.Codes[i]
		c.Doc = replaceWords(c.Doc, merge(global, map[string]string{c.Name: c.CName}))
	}
	if s := l.a.Options; s != nil {
		fields := map[string]string{}
		for _, f := range s.Fields {
			if !f.SetOf {
				fields[f.Option.Name] = f.CName
			}
		}
		for i := range s.Fields {
			s.Fields[i].Option.Doc = replaceWords(s.Fields[i].Option.Doc, merge(global, fields))
		}
	}
	if rest, ok := strings.CutPrefix(l.a.Doc, l.m.ABI.Name+" is "); ok {
		l.a.Doc = l.a.Library + ".h is " + rest
	}
	for i := range l.a.Funcs {
		f := &l.a.Funcs[i]
		names := merge(global, nil)
		for _, g := range l.a.Funcs {
			if g.Surface == f.Surface && g.Kind == f.Kind {
				names[g.Method.Name] = g.Name
			}
		}
		for _, p := range f.Params {
			if p.GoIndex >= 0 && p.Role != RoleOption && p.Role != RoleOptions && p.Role != RoleUserData {
				if goName := f.Method.Params[p.GoIndex].Name; goName != p.Name {
					names[goName] = p.Name
				}
			}
			switch p.Role {
			case RoleOption:
				names[p.Option.Constructor()] = p.Name
			case RoleOptions:
				for _, sf := range l.a.Options.Fields {
					if !sf.SetOf {
						names[sf.Option.Constructor()] = "opts->" + sf.CName
					}
				}
			}
		}
		f.Doc = replaceWords(f.Doc, names)
		for j := range f.Params {
			f.Params[j].Doc = l.paramDoc(f.Params[j])
		}
	}
	if cb := l.a.Callback; cb != nil {
		cb.Doc = fmt.Sprintf("%s is the function a lock runs, on the thread that called the function running it. It receives the lock's handle, lent for the call: the functions on a %s work on it, but it must not be freed, and it is invalid once the callback returns. It also receives the caller's user_data. It returns 0 for success; any other value makes the call that ran it return %s.", cb.CType, cb.Handle.CType, l.a.Fallback)
	}
}

// merge returns a new map with the entries of a, then b.
func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// replaceWords replaces whole words (and *Name for error types) by their
// C names, leaving qualified names (Manager.Try) and longer words alone.
func replaceWords(text string, names map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		if !isWordStart(text, i) {
			b.WriteByte(text[i])
			i++
			continue
		}
		j := i
		if text[j] == '*' {
			j++
		}
		for j < len(text) && isIdent(text[j]) {
			j++
		}
		word := text[i:j]
		if c, ok := names[word]; ok && (j == len(text) || text[j] != '.' || j+1 == len(text) || text[j+1] == ' ' || text[j+1] == '\n') {
			if c == strings.ToUpper(c) {
				// A code is not an object: "returns a *LostError" reads
				// "returns ZL_LOST".
				dropArticle(&b)
			}
			b.WriteString(c)
		} else {
			b.WriteString(word)
		}
		i = j
	}
	return b.String()
}

// dropArticle removes an "a " or "an " that ends b.
func dropArticle(b *strings.Builder) {
	s := b.String()
	for _, art := range []string{"a", "an", "A", "An"} {
		for _, sep := range []string{" ", "\n"} {
			if rest, ok := strings.CutSuffix(s, art+sep); ok && (rest == "" || !isIdent(rest[len(rest)-1])) {
				b.Reset()
				b.WriteString(rest)
				return
			}
		}
	}
}

// isWordStart reports whether a word (or *Word) starts at text[i].
func isWordStart(text string, i int) bool {
	if i > 0 && (isIdent(text[i-1]) || text[i-1] == '.' || text[i-1] == '*') {
		return false
	}
	if text[i] == '*' {
		return i+1 < len(text) && 'A' <= text[i+1] && text[i+1] <= 'Z'
	}
	return isIdent(text[i])
}

func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// paramDoc describes a parameter in a line or two.
func (l *lowerer) paramDoc(p Param) string {
	switch p.Role {
	case RoleHandle:
		from := append([]string(nil), p.Handle.MadeBy...)
		if cb := l.a.Callback; cb != nil && cb.Handle == p.Handle {
			from = append(from, "a callback's argument")
		}
		return fmt.Sprintf("a %s from %s", p.Handle.CType, strings.Join(from, " or "))
	case RoleString:
		return "NUL-terminated UTF-8, not NULL"
	case RoleMillis:
		return "milliseconds"
	case RoleInt:
		return "an int"
	case RoleCode:
		return "an error code (" + l.a.Prefix + "_code)"
	case RoleConfig:
		return `the configuration as a JSON object, or NULL or "" to read it from the environment`
	case RoleOptions:
		return fmt.Sprintf("the options, or NULL for the defaults (%s)", l.a.Options.CType)
	case RoleOption:
		switch p.Option.Type.Kind {
		case model.Duration:
			def := "the default"
			if !p.Option.Default.IsZero() {
				def += " (" + p.Option.Default.Text() + ")"
			}
			return "milliseconds, or a negative value for " + def
		case model.Bool:
			return "non-zero to turn it on"
		}
		return "NUL-terminated UTF-8, or NULL for the default"
	case RoleCallback:
		return "runs under the lock, on the calling thread"
	case RoleUserData:
		return "passed to the callback unchanged"
	case RoleOutBool:
		return "out: 1 for true, 0 for false"
	case RoleOutInt, RoleOutUint64:
		return "out: the result"
	case RoleOutUnixMillis:
		return "out: milliseconds since the Unix epoch; 0 for none"
	case RoleOutHandle:
		return fmt.Sprintf("out: a new handle; end it with %s", p.Handle.FreedBy)
	case RoleOutBuffer:
		return "out: the caller's buffer, or NULL to ask for the size"
	case RoleOutLen:
		return "in: the buffer's size; out: the size needed, NUL included"
	}
	return ""
}
