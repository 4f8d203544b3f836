package helpers

// The tokens of a Python expression for the recognizer (skim.go): names,
// numbers, operators and delimiters, and strings with their prefixes,
// escapes and f-string fields, read where they stand in the reply.

import (
	"math/big"
	"strings"
	"unicode/utf8"
)

// token is the next token: kind is 'n' (a name), '0' (a number), '"' (a
// string, read by str), 'o' (an operator or delimiter) or 0 (the end of
// the text, </helpers>, or a character Python does not use).
type token struct {
	kind     byte
	text     string
	off, end int
}

func (t token) isWord(w string) bool { return t.kind == 'n' && t.text == w }

func (t token) isOp(ops ...string) bool {
	if t.kind != 'o' {
		return false
	}
	for _, op := range ops {
		if t.text == op {
			return true
		}
	}
	return false
}

// pyOperators are Python's operators and delimiters, longest first.
var pyOperators = []string{
	"**=", "//=", ">>=", "<<=", "...",
	"**", "//", ">>", "<<", "<=", ">=", "==", "!=", ":=", "->",
	"+=", "-=", "*=", "/=", "%=", "@=", "&=", "|=", "^=",
	"+", "-", "*", "/", "%", "@", "&", "|", "^", "~", "<", ">",
	"(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=", "!",
}

// peek finds the next token without reading it.
func (s *skimmer) peek() token {
	p := s.p
	save := p.pos
	defer func() { p.pos = save }()
	p.skipSpace()
	off := p.pos
	if off >= len(p.src) || p.at(Close) {
		return token{off: off}
	}
	c := p.src[off]
	if _, ok := p.stringPrefix(); ok || c == '"' || c == '\'' {
		return token{kind: '"', off: off}
	}
	if pyDigit(c) || (c == '.' && off+1 < len(p.src) && pyDigit(p.src[off+1])) {
		if end := skimNumber(p.src, off); end > off {
			return token{kind: '0', text: p.src[off:end], off: off, end: end}
		}
		return token{off: off}
	}
	if name := p.ident(); name != "" {
		return token{kind: 'n', text: name, off: off, end: p.pos}
	}
	for _, op := range pyOperators {
		if p.at(op) {
			return token{kind: 'o', text: op, off: off, end: off + len(op)}
		}
	}
	return token{off: off}
}

// take reads t, which peek found.
func (s *skimmer) take(t token) {
	s.p.pos, s.end = t.end, t.end
}

// expect reads the operator op if it comes next.
func (s *skimmer) expect(op string) bool {
	if t := s.peek(); t.isOp(op) {
		s.take(t)
		return true
	}
	return false
}

// word reads the keyword w if it comes next.
func (s *skimmer) word(w string) bool {
	if t := s.peek(); t.isWord(w) {
		s.take(t)
		return true
	}
	return false
}

// str reads the string literal at p.pos, its prefix included: r, u, f, b
// and the pairs Python takes; the escapes \x, \u, \U and \N{...} checked
// as Python checks them; an f-string's fields read as expressions.
func (s *skimmer) str() bool {
	p := s.p
	pre := ""
	if c := p.src[p.pos]; c != '"' && c != '\'' {
		pre, _ = p.stringPrefix()
	}
	low := strings.ToLower(pre)
	switch low {
	case "", "r", "u", "f", "b", "br", "rb", "fr", "rf":
	default:
		return false
	}
	raw, isF, isB := strings.Contains(low, "r"), strings.Contains(low, "f"), strings.Contains(low, "b")
	p.pos += len(pre)
	closer := p.src[p.pos : p.pos+1]
	if triple := strings.Repeat(closer, 3); p.at(triple) {
		closer = triple
	}
	p.pos += len(closer)
	for {
		if p.pos >= len(p.src) {
			return false
		}
		switch c := p.src[p.pos]; {
		case p.at(closer):
			p.pos += len(closer)
			s.end = p.pos
			return true
		case c == '\n' && len(closer) == 1:
			return false
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return false
			}
			e := p.src[p.pos+1]
			if isF && (e == '{' || e == '}') {
				p.pos++ // the brace is the f-string's
				continue
			}
			p.pos += 2
			if !raw && !skimEscape(p, e, isB) {
				return false
			}
		case isF && (p.at("{{") || p.at("}}")):
			p.pos += 2
		case isF && c == '{':
			p.pos++
			if !s.field(closer) {
				return false
			}
		case isF && c == '}':
			return false
		default:
			p.pos++
		}
	}
}

// skimEscape checks the escape \e whose letter was just read: \x, \u, \U
// need their hex digits (\u and \U only in a str), \N{...} a name.
func skimEscape(p *helperParser, e byte, isB bool) bool {
	hex := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
	switch {
	case e == 'x' || (!isB && hex > 0):
		r, ok := p.hexRune(hex)
		return ok && r >= 0
	case e == 'N' && !isB:
		if !p.at("{") {
			return false
		}
		end := strings.IndexAny(p.src[p.pos:], "}\n")
		if end < 2 || p.src[p.pos+end] != '}' {
			return false
		}
		p.pos += end + 1
	}
	return true
}

// field reads an f-string's {expression[=][!conversion][:spec]} after
// its '{', and '}'; closer is the string's closing quote.
func (s *skimmer) field(closer string) bool {
	if !s.starItemList() {
		return false
	}
	if t := s.peek(); t.isOp("=") {
		s.take(t)
	}
	if s.expect("!") && !s.word("r") && !s.word("s") && !s.word("a") {
		return false
	}
	if s.expect(":") {
		p := s.p
		for {
			switch {
			case p.pos >= len(p.src) || p.at(closer) || (p.src[p.pos] == '\n' && len(closer) == 1):
				return false
			case p.src[p.pos] == '{':
				p.pos++
				if !s.field(closer) {
					return false
				}
				continue
			case p.src[p.pos] == '}':
				p.pos++
				return true
			case p.src[p.pos] == '\\':
				p.pos++
			}
			p.pos++
		}
	}
	return s.expect("}")
}

// starItemList reads items separated by commas, up to what follows them
// (an f-string field may hold a tuple).
func (s *skimmer) starItemList() bool {
	item := func() bool {
		if s.expect("*") {
			return s.chain()
		}
		return s.test()
	}
	if !item() {
		return false
	}
	for s.expect(",") {
		if n := s.peek(); n.isOp("}", "=", "!", ":") {
			return true
		}
		if !item() {
			return false
		}
	}
	return true
}

// skimNumber is where the number literal at src[off] ends, or off when it
// is not one Python takes (a letter right after it, a misplaced '_', a
// leading zero, digits outside its base).
func skimNumber(src string, off int) int {
	i := off
	run := func(ok func(byte) bool) {
		for i < len(src) && (ok(src[i]) || src[i] == '_') {
			i++
		}
	}
	base := 10
	if src[i] == '0' && i+1 < len(src) && strings.IndexByte("xXoObB", src[i+1]) >= 0 {
		base = map[byte]int{'x': 16, 'o': 8, 'b': 2}[src[i+1]|0x20]
		i += 2
		run(pyHexDigit)
		lit := src[off:i]
		if _, ok := new(big.Int).SetString(strings.ReplaceAll(lit[2:], "_", ""), base); !ok || !underscoresOK(lit, base) {
			return off
		}
	} else {
		run(pyDigit)
		isFloat := false
		if i < len(src) && src[i] == '.' {
			isFloat = true
			i++
			run(pyDigit)
		}
		if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
			j := i + 1
			if j < len(src) && (src[j] == '+' || src[j] == '-') {
				j++
			}
			if j < len(src) && pyDigit(src[j]) {
				isFloat, i = true, j
				run(pyDigit)
			}
		}
		lit := src[off:i]
		imaginary := i < len(src) && (src[i] == 'j' || src[i] == 'J')
		if imaginary {
			i++
		}
		clean := strings.ReplaceAll(lit, "_", "")
		if !isFloat && !imaginary && len(clean) > 1 && clean[0] == '0' && strings.Trim(clean, "0") != "" {
			return off
		}
		if !underscoresOK(strings.Trim(lit, "."), 10) || strings.Contains(lit, "_.") || strings.Contains(lit, "._") {
			return off
		}
	}
	if r, _ := utf8.DecodeRuneInString(src[i:]); i < len(src) && pyIdentRune(r, true) {
		return off
	}
	return i
}
