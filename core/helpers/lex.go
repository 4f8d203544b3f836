package helpers

// The lexical rules of the helpers format: white space, comments and line
// continuations, identifiers, digits and Python's keywords.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// skipSpace skips spaces, comments (to the end of the line, or to
// </helpers>), backslash line continuations and, inside brackets, newlines.
func (p *helperParser) skipSpace() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			p.pos++
		case c == '\n' && p.depth > 0:
			p.pos++
		case c == '\\' && p.at("\\\n"):
			p.pos += 2
		case c == '\\' && p.at("\\\r\n"):
			p.pos += 3
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && !p.at(Close) {
				p.pos++
			}
		default:
			return
		}
	}
}

// skipBlank skips space, blank lines and ';' between statements.
func (p *helperParser) skipBlank() {
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || (p.src[p.pos] != '\n' && p.src[p.pos] != ';') {
			return
		}
		p.pos++
	}
}

// ident reads a Python identifier (possibly empty).
func (p *helperParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if !pyIdentRune(r, p.pos > start) {
			break
		}
		p.pos += n
	}
	return p.src[start:p.pos]
}

func pyIdentRune(r rune, notFirst bool) bool {
	if r == '_' || unicode.IsLetter(r) {
		return true
	}
	return notFirst && (unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc))
}

// IsIdentifier reports whether s can be written as a keyword argument
// name (name=value): a Python identifier that is not a keyword.
func IsIdentifier(s string) bool {
	if s == "" || pythonKeywords[s] {
		return false
	}
	for i, r := range s {
		if !pyIdentRune(r, i > 0) {
			return false
		}
	}
	return true
}

func pyDigit(c byte) bool    { return c >= '0' && c <= '9' }
func pyHexDigit(c byte) bool { return pyDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

func pyOperatorRun(s, set string) string {
	i := 0
	for i < len(s) && strings.IndexByte(set, s[i]) >= 0 {
		i++
	}
	return s[:i]
}

// IsKeyword reports whether s is a Python keyword (which a statement
// cannot assign to, though an argument name may be one).
func IsKeyword(s string) bool { return pythonKeywords[s] }

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}
