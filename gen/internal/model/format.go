package model

import (
	"fmt"
	"strings"
)

// parseFormat parses an error message template:
//
//	text {Field} text {Field:q} [optional text {Field}]
//
// {Field} prints a field with %v and {Field:q} with %q. A bracketed group is
// printed only when the one field it mentions is non-zero. Groups do not
// nest, and the template has no escapes: braces and brackets are syntax.
func parseFormat(s string) ([]Piece, error) {
	var pieces []Piece
	guard := "" // the group's field, once seen
	inGroup := false
	groupStart := 0
	for s != "" {
		i := strings.IndexAny(s, "{}[]")
		if i < 0 {
			pieces = appendText(pieces, s, inGroup)
			break
		}
		if i > 0 {
			pieces = appendText(pieces, s[:i], inGroup)
		}
		switch s[i] {
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("format: unterminated {")
			}
			ref := s[i+1 : i+end]
			name, verb, hasVerb := strings.Cut(ref, ":")
			if name == "" || (hasVerb && verb != "q") {
				return nil, fmt.Errorf("format: bad field reference {%s}: want {Field} or {Field:q}", ref)
			}
			if inGroup {
				if guard != "" && guard != name {
					return nil, fmt.Errorf("format: group mentions %s and %s; a group is guarded by one field", guard, name)
				}
				guard = name
			}
			pieces = append(pieces, Piece{Field: name, Quote: hasVerb})
			s = s[i+end+1:]
			continue
		case '[':
			if inGroup {
				return nil, fmt.Errorf("format: groups do not nest")
			}
			inGroup, guard, groupStart = true, "", len(pieces)
		case ']':
			if !inGroup {
				return nil, fmt.Errorf("format: ] without [")
			}
			if guard == "" {
				return nil, fmt.Errorf("format: a group must mention a field")
			}
			for j := groupStart; j < len(pieces); j++ {
				pieces[j].Guard = guard
			}
			inGroup = false
		case '}':
			return nil, fmt.Errorf("format: } without {")
		}
		s = s[i+1:]
	}
	if inGroup {
		return nil, fmt.Errorf("format: unterminated [")
	}
	return pieces, nil
}

// appendText adds literal text; a marker keeps group text apart from the
// text around it until the group's guard is known.
func appendText(pieces []Piece, text string, inGroup bool) []Piece {
	if n := len(pieces); n > 0 && !inGroup && pieces[n-1].Field == "" && pieces[n-1].Guard == "" {
		pieces[n-1].Text += text
		return pieces
	}
	return append(pieces, Piece{Text: text})
}
