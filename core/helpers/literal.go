package helpers

// Python literals of the helpers format: strings with their prefixes and
// escapes, and numbers, written back as JSON.

import (
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// stringPrefix reports a string prefix (one or two of r, u, b, f in either
// case) directly followed by a quote.
func (p *helperParser) stringPrefix() (string, bool) {
	for n := 1; n <= 2 && p.pos+n < len(p.src); n++ {
		pre := strings.ToLower(p.src[p.pos : p.pos+n])
		if strings.Trim(pre, "rubf") != "" {
			return "", false
		}
		if q := p.src[p.pos+n]; q == '"' || q == '\'' {
			return pre, true
		}
	}
	return "", false
}

// stringLits reads one string literal, or several written next to each other
// (which Python joins). With an f-string among them it gives an hFString,
// else an hLit.
func (p *helperParser) stringLits() (hexpr, *Error) {
	start := p.pos
	var s strings.Builder
	var parts []hexpr // set once an f-string is met
	isF := false
	for {
		off := p.pos
		pre := ""
		if q := p.src[p.pos]; q != '"' && q != '\'' {
			pre, _ = p.stringPrefix()
		}
		if strings.Contains(pre, "b") {
			return nil, p.errAt(off, `bytes literals (b"...") are not supported; write a str`)
		}
		p.pos += len(pre)
		raw := strings.Contains(pre, "r")
		if strings.Contains(pre, "f") {
			fparts, err := p.fstring(off, raw)
			if err != nil {
				return nil, err
			}
			if !isF && s.Len() > 0 {
				parts = append(parts, strLit(s.String(), start))
			}
			isF = true
			parts = append(parts, fparts...)
		} else {
			part, err := p.stringLit(off, raw)
			if err != nil {
				return nil, err
			}
			if isF {
				parts = append(parts, strLit(part, off))
			} else {
				s.WriteString(part)
			}
		}
		save := p.pos
		p.skipSpace()
		if p.pos >= len(p.src) {
			break
		}
		if _, ok := p.stringPrefix(); !ok && p.src[p.pos] != '"' && p.src[p.pos] != '\'' {
			p.pos = save
			break
		}
	}
	if isF {
		return &hFString{parts: parts, off: start}, nil
	}
	return strLit(s.String(), start), nil
}

func strLit(s string, off int) *hLit {
	return &hLit{lit: pyLit{json: jsonQuoted(s), str: s, isStr: true}, off: off}
}

// stringLit reads the literal whose opening quote is at p.pos; start is where
// it began (its prefix), for messages.
func (p *helperParser) stringLit(start int, raw bool) (string, *Error) {
	closer := p.src[p.pos : p.pos+1]
	if triple := strings.Repeat(closer, 3); p.at(triple) {
		closer = triple
	}
	p.pos += len(closer)
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.errAt(start, "this string is not closed (was the reply cut off?)")
		}
		switch c := p.src[p.pos]; {
		case p.at(closer):
			p.pos += len(closer)
			return b.String(), nil
		case c == '\n' && len(closer) == 1:
			return "", p.errAt(start, `this string is not closed on its line: write a line break inside a string as \n, or use triple quotes`)
		case c == '\\':
			if err := p.escape(&b, raw, start); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// escape reads the escape sequence at p.pos (a backslash) into b.
func (p *helperParser) escape(b *strings.Builder, raw bool, start int) *Error {
	at := p.pos
	if p.pos+1 >= len(p.src) {
		return p.errAt(start, "this string is not closed (was the reply cut off?)")
	}
	e := p.src[p.pos+1]
	p.pos += 2
	if raw { // a raw string keeps the backslash and the character after it
		b.WriteByte('\\')
		b.WriteByte(e)
		return nil
	}
	switch e {
	case '\n': // line continuation
	case '\r':
		if p.at("\n") {
			p.pos++
		}
	case '\\', '\'', '"':
		b.WriteByte(e)
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case 'a':
		b.WriteByte('\a')
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'v':
		b.WriteByte('\v')
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v := rune(e - '0')
		for i := 0; i < 2 && p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '7'; i++ {
			v = v*8 + rune(p.src[p.pos]-'0')
			p.pos++
		}
		b.WriteRune(v)
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		r, ok := p.hexRune(n)
		if !ok {
			return p.errAt(at, `invalid \%c escape: it needs %d hex digits`, e, n)
		}
		if r >= 0xD800 && r < 0xDC00 && p.at(`\u`) { // a UTF-16 surrogate pair
			save := p.pos
			p.pos += 2
			if lo, ok := p.hexRune(4); ok && lo >= 0xDC00 && lo < 0xE000 {
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			} else {
				p.pos = save
			}
		}
		if (r >= 0xD800 && r < 0xE000) || r < 0 {
			return p.errAt(at, `the escape \%c%s is not a valid character; write the character itself`, e, p.src[at+2:p.pos])
		}
		b.WriteRune(r)
	case 'N':
		return p.errAt(at, `\N{...} escapes are not supported; write the character itself`)
	default: // Python keeps unknown escapes as written
		b.WriteByte('\\')
		p.pos--
	}
	return nil
}

// hexRune reads n hex digits as a code point (which may be out of range).
func (p *helperParser) hexRune(n int) (rune, bool) {
	if p.pos+n > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += n
	if v > unicode.MaxRune {
		return -1, true
	}
	return rune(v), true
}

// number reads a number literal at p.pos; sign is "", "-" or "+", and off
// is where the literal (with its sign) began.
func (p *helperParser) number(sign string, off int) (pyLit, *Error) {
	start := p.pos
	src := p.src
	digits := func(ok func(byte) bool) {
		for p.pos < len(src) && (ok(src[p.pos]) || src[p.pos] == '_') {
			p.pos++
		}
	}
	base, isFloat := 10, false
	if src[start] == '0' && start+1 < len(src) && strings.IndexByte("xXoObB", src[start+1]) >= 0 {
		base = map[byte]int{'x': 16, 'o': 8, 'b': 2}[src[start+1]|0x20]
		p.pos += 2
		digits(pyHexDigit)
	} else {
		digits(pyDigit)
		if p.at(".") {
			isFloat = true
			p.pos++
			digits(pyDigit)
		}
		if p.pos < len(src) && (src[p.pos] == 'e' || src[p.pos] == 'E') {
			save := p.pos
			p.pos++
			if p.at("+") || p.at("-") {
				p.pos++
			}
			if p.pos < len(src) && pyDigit(src[p.pos]) {
				isFloat = true
				digits(pyDigit)
			} else {
				p.pos = save
			}
		}
	}
	lit := src[start:p.pos]
	if p.pos < len(src) && (src[p.pos] == 'j' || src[p.pos] == 'J') {
		return pyLit{}, p.errAt(off, "complex numbers are not supported")
	}
	if r, _ := utf8.DecodeRuneInString(src[p.pos:]); p.pos < len(src) && pyIdentRune(r, true) {
		return pyLit{}, p.errAt(off, "%s is not a valid number", quoteExcerpt(src[start:]))
	}
	if !underscoresOK(lit, base) {
		return pyLit{}, p.errAt(off, "%s is not a valid number: '_' may only stand between digits", lit)
	}
	clean := strings.ReplaceAll(lit, "_", "")
	neg := sign == "-"
	if base != 10 {
		n, ok := new(big.Int).SetString(clean[2:], base)
		if !ok {
			return pyLit{}, p.errAt(off, "%s is not a valid number", lit)
		}
		if neg {
			n.Neg(n)
		}
		return pyLit{json: n.String()}, nil
	}
	if !isFloat {
		if trimmed := strings.TrimLeft(clean, "0"); trimmed != "" && trimmed != clean {
			return pyLit{}, p.errAt(off, "leading zeros are not allowed in an integer: write %s", trimmed)
		} else if trimmed == "" {
			return pyLit{json: "0"}, nil
		}
		return pyLit{json: strings.TrimPrefix(sign, "+") + clean}, nil
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil && !(f == 0 && strings.ContainsAny(clean, "eE")) {
		return pyLit{}, p.errAt(off, "%s is out of range for a float", lit)
	}
	text := clean
	if !isJSONNumberText(clean) {
		text = strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eE") {
			text += ".0"
		}
	}
	if neg {
		text = "-" + text
	}
	return pyLit{json: text}, nil
}

// underscoresOK reports whether every '_' in a number literal stands between
// two digits (or just after the 0x, 0o, 0b prefix).
func underscoresOK(lit string, base int) bool {
	for i := 0; i < len(lit); i++ {
		if lit[i] != '_' {
			continue
		}
		if i == 0 || i+1 >= len(lit) {
			return false
		}
		prev, next := lit[i-1], lit[i+1]
		if base == 10 && (!pyDigit(prev) || !pyDigit(next)) {
			return false
		}
		if base != 10 && (!(pyHexDigit(prev) || i == 2) || !pyHexDigit(next)) {
			return false
		}
	}
	return true
}

// isJSONNumberText reports whether s (unsigned) is a JSON number as written.
func isJSONNumberText(s string) bool {
	i := 0
	run := func() int {
		j := i
		for i < len(s) && pyDigit(s[i]) {
			i++
		}
		return i - j
	}
	if n := run(); n == 0 || (n > 1 && s[0] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if run() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if run() == 0 {
			return false
		}
	}
	return i == len(s)
}
