package helpers

// Expressions of the helpers format: literals, names, lists, tuples,
// dicts, subscripts, + and f-strings (the package doc describes the
// subset). The parser builds the tree below; evaluation is in eval.go.

import "strings"

// hexpr is an expression of a helpers program. Every node knows where it was
// written (a byte offset into the reply), for messages.
type hexpr interface{ offset() int }

// hLit is a literal, or a value folded from literals, as JSON.
type hLit struct {
	lit pyLit
	off int
}

// hName reads a name bound by an earlier statement.
type hName struct {
	name string
	off  int
}

// hList is a list or tuple: a JSON array.
type hList struct {
	items []hexpr
	off   int
}

// hDict is a dict with string keys: a JSON object.
type hDict struct {
	members []hMember
	off     int
}

type hMember struct {
	key string
	val hexpr
	off int
}

// hIndex is x[key]; off is where '[' is.
type hIndex struct {
	x, key hexpr
	off    int
}

// hSum is terms joined by +, added left to right; ops are where each +
// is.
type hSum struct {
	terms []hexpr
	ops   []int
}

// hFString is an f-string: its literal parts (hLit strings) and fields.
type hFString struct {
	parts []hexpr
	off   int
}

func (e *hLit) offset() int     { return e.off }
func (e *hName) offset() int    { return e.off }
func (e *hList) offset() int    { return e.off }
func (e *hDict) offset() int    { return e.off }
func (e *hIndex) offset() int   { return e.off }
func (e *hSum) offset() int     { return e.terms[0].offset() }
func (e *hFString) offset() int { return e.off }

// maxHelperSubscripts bounds a chain of subscripts such as x[0][1]...
const maxHelperSubscripts = 64

// expr reads an expression: terms joined by +.
func (p *helperParser) expr() (hexpr, *Error) {
	first, err := p.postfix()
	if err != nil {
		return nil, err
	}
	sum := &hSum{terms: []hexpr{first}}
	for {
		save := p.pos
		p.skipSpace()
		if !p.at("+") || p.at("+=") {
			p.pos = save
			break
		}
		sum.ops = append(sum.ops, p.pos)
		p.pos++
		t, err := p.postfix()
		if err != nil {
			return nil, err
		}
		sum.terms = append(sum.terms, t)
	}
	if len(sum.terms) == 1 {
		return first, nil
	}
	return sum, nil
}

// postfix reads a value and the subscripts after it.
func (p *helperParser) postfix() (hexpr, *Error) {
	x, err := p.atom()
	if err != nil {
		return nil, err
	}
	for n := 0; ; n++ {
		save := p.pos
		p.skipSpace()
		if !p.at("[") {
			p.pos = save
			return x, nil
		}
		if n == maxHelperSubscripts {
			return nil, p.firmAt(p.pos, "more than %d subscripts in a row", maxHelperSubscripts)
		}
		off := p.pos
		p.pos++
		p.depth++
		p.nest++
		key, err := p.expr()
		p.nest--
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		switch {
		case p.pos >= len(p.src):
			return nil, p.cutOff()
		case p.at(":"):
			return nil, p.errAt(p.pos, "slices ([a:b]) are not supported; subscripts take one key or index")
		case !p.at("]"):
			return nil, p.afterValue("']'")
		}
		p.pos++
		p.depth--
		x = &hIndex{x: x, key: key, off: off}
	}
}

// atom reads a literal, a name, a list, tuple or dict, or a parenthesised
// expression.
func (p *helperParser) atom() (hexpr, *Error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, p.cutOff()
	}
	if p.nest >= maxHelperNesting {
		return nil, p.firmAt(p.pos, "values are nested more than %d levels deep", maxHelperNesting)
	}
	off := p.pos
	c := p.src[p.pos]
	switch {
	case c == '"' || c == '\'':
		return p.stringLits()
	case pyDigit(c) || (c == '.' && p.pos+1 < len(p.src) && pyDigit(p.src[p.pos+1])):
		return p.numberExpr("", off)
	case c == '-' || c == '+':
		p.pos++
		p.skipSpace()
		if p.pos < len(p.src) && (pyDigit(p.src[p.pos]) || (p.src[p.pos] == '.' && p.pos+1 < len(p.src) && pyDigit(p.src[p.pos+1]))) {
			return p.numberExpr(string(c), off)
		}
		return nil, p.errAt(off, "%c must be followed by a number: a sign applies to number literals only (no other operators than + are supported)", c)
	case c == '[':
		return p.sequence(']')
	case c == '(':
		return p.sequence(')')
	case c == '{':
		members, err := p.dict()
		if err != nil {
			return nil, err
		}
		return &hDict{members: members, off: off}, nil
	case p.at(Close):
		return nil, p.notClosed(off)
	}
	if _, ok := p.stringPrefix(); ok {
		return p.stringLits()
	}
	name := p.ident()
	switch name {
	case "":
		return nil, p.errAt(off, "expected a value, found %s: a value is a literal (string, number, True/False/None, list, dict, tuple), a name assigned before, x[key], a + b or an f-string", quoteExcerpt(p.rest()))
	case "True":
		return &hLit{lit: pyLit{json: "true"}, off: off}, nil
	case "False":
		return &hLit{lit: pyLit{json: "false"}, off: off}, nil
	case "None":
		return &hLit{lit: pyLit{json: "null"}, off: off}, nil
	}
	if pythonKeywords[name] {
		return nil, p.errAt(off, "found the keyword %s: %s", name, helpersSubsetHint)
	}
	save := p.pos
	p.skipSpace()
	switch {
	case p.at("("):
		if _, isTool := helperTool(p.tools, name); isTool {
			return nil, p.firmAt(off, "the call %s(...) inside %s is not allowed: calls cannot be nested; call it in a statement of its own, r = %s(...), and use r here", name, p.ctx, name)
		}
		return nil, p.errAt(off, "%s(...) is not available: a <helpers> block calls only its tools (%s); build text with an f-string", name, p.toolList())
	case p.at("."):
		return nil, p.errAt(off, "%s.…: attribute access and methods are not supported; read a field with %s[\"key\"]", name, name)
	}
	p.pos = save
	if !p.defined[name] {
		switch {
		case name == "true" || name == "false" || name == "null":
			return nil, p.firmAt(off, "%s is not Python; write %s", name, map[string]string{"true": "True", "false": "False", "null": "None"}[name])
		}
		if _, isTool := helperTool(p.tools, name); isTool {
			return nil, p.firmAt(off, "%s is a tool: call it in a statement of its own, r = %s(...), and use r", name, name)
		}
		return nil, p.errAt(off, "%s is not defined: assign it in an earlier statement (%s = a_tool(...)), or write the value itself", name, name)
	}
	return &hName{name: name, off: off}, nil
}

// helpersSubsetHint says what a value may be, for messages.
const helpersSubsetHint = "values are literals, names assigned before, x[key], a + b and f-strings; there are no conditions, loops, comparisons or other operators"

func (p *helperParser) numberExpr(sign string, off int) (hexpr, *Error) {
	lit, err := p.number(sign, off)
	if err != nil {
		return nil, err
	}
	return &hLit{lit: lit, off: off}, nil
}

// sequence reads a list, or a tuple or parenthesised value (close is ')');
// lists and tuples become JSON arrays.
func (p *helperParser) sequence(close byte) (hexpr, *Error) {
	off := p.pos
	p.pos++
	p.depth++
	p.nest++
	defer func() { p.nest-- }()
	var items []hexpr
	comma := false
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.cutOff()
		}
		if p.src[p.pos] == close {
			p.pos++
			p.depth--
			break
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		sep, err := p.separator(close)
		if err != nil {
			return nil, err
		}
		comma = comma || sep
	}
	if close == ')' && len(items) == 1 && !comma {
		return items[0], nil // (x) is x, not a tuple
	}
	return &hList{items: items, off: off}, nil
}

// dict reads a dict literal whose keys are strings.
func (p *helperParser) dict() ([]hMember, *Error) {
	p.pos++
	p.depth++
	p.nest++
	defer func() { p.nest-- }()
	var members []hMember
	seen := map[string]bool{}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.cutOff()
		}
		if p.src[p.pos] == '}' {
			p.pos++
			p.depth--
			return members, nil
		}
		koff := p.pos
		if p.at("**") {
			return nil, p.errAt(koff, "** inside a dict is not supported; write the keys and values")
		}
		ke, err := p.expr()
		if err != nil {
			return nil, err
		}
		if ke, err = p.fold(ke); err != nil {
			return nil, err
		}
		k, isLit := ke.(*hLit)
		switch {
		case isLit && !k.lit.isStr:
			return nil, p.errAt(koff, "dict keys must be strings, found %s", k.lit.json)
		case !isLit:
			return nil, p.errAt(koff, "dict keys must be written as strings (\"key\": value), not computed from names")
		}
		p.skipSpace()
		switch {
		case p.pos >= len(p.src):
			return nil, p.cutOff()
		case p.at(",") || p.at("}"):
			return nil, p.errAt(p.pos, "sets are not supported: use a list [...], or write key: value pairs for a dict")
		case !p.at(":"):
			return nil, p.afterValue("':'")
		}
		p.pos++
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		if seen[k.lit.str] {
			return nil, p.errAt(koff, "the key %q appears twice in a dict", k.lit.str)
		}
		seen[k.lit.str] = true
		members = append(members, hMember{key: k.lit.str, val: v, off: koff})
		if _, err := p.separator('}'); err != nil {
			return nil, err
		}
	}
}

// afterValue explains what is wrong with the text after a value where
// expected (such as "',' or ')'") should come.
func (p *helperParser) afterValue(expected string) *Error {
	off := p.pos
	rest := p.rest()
	if p.at(Close) {
		return p.notClosed(off)
	}
	if op := pyOperatorRun(rest, "+-*/%@&|^<>=!~"); op != "" {
		return p.errAt(off, "found the operator %s: the only operator is + (on two strings or two numbers); compute other values yourself and write the result", op)
	}
	switch rest[0] {
	case '.':
		return p.errAt(off, "attribute access or a method call on a value is not supported; read a field with x[\"key\"]")
	case '(':
		return p.errAt(off, "a value cannot be called; only tools are called, each in a statement of its own")
	}
	save := p.pos
	word := p.ident()
	p.pos = save
	if pythonKeywords[word] {
		return p.errAt(off, "found %s: %s", word, helpersSubsetHint)
	}
	return p.errAt(off, "expected %s in %s, found %s", expected, p.ctx, quoteExcerpt(rest))
}

// fstring reads the body of an f-string whose opening quote is at p.pos
// (start is where its prefix began) into literal parts and fields.
func (p *helperParser) fstring(start int, raw bool) ([]hexpr, *Error) {
	closer := p.src[p.pos : p.pos+1]
	if triple := strings.Repeat(closer, 3); p.at(triple) {
		closer = triple
	}
	p.pos += len(closer)
	var parts []hexpr
	var b strings.Builder
	litAt := p.pos
	flush := func() {
		if b.Len() > 0 {
			s := b.String()
			parts = append(parts, &hLit{lit: pyLit{json: jsonQuoted(s), str: s, isStr: true}, off: litAt})
			b.Reset()
		}
	}
	for {
		if p.pos >= len(p.src) {
			return nil, p.errAt(start, "this string is not closed (was the reply cut off?)")
		}
		switch c := p.src[p.pos]; {
		case p.at(closer):
			p.pos += len(closer)
			flush()
			return parts, nil
		case c == '\n' && len(closer) == 1:
			return nil, p.errAt(start, `this string is not closed on its line: write a line break inside a string as \n, or use triple quotes`)
		case c == '{' && p.at("{{"), c == '}' && p.at("}}"):
			b.WriteByte(c)
			p.pos += 2
		case c == '}':
			return nil, p.errAt(p.pos, "a single } in an f-string: write }} for a brace")
		case c == '{':
			flush()
			if err := p.fstringField(&parts); err != nil {
				return nil, err
			}
			litAt = p.pos
		case c == '\\':
			if err := p.escape(&b, raw, start); err != nil {
				return nil, err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// fstringField reads {expression} at p.pos.
func (p *helperParser) fstringField(parts *[]hexpr) *Error {
	open := p.pos
	p.pos++
	p.depth++
	p.nest++
	saveCtx := p.ctx
	p.ctx = "the f-string field"
	defer func() { p.ctx = saveCtx }()
	e, err := p.expr()
	p.nest--
	if err != nil {
		return err
	}
	p.skipSpace()
	switch {
	case p.pos >= len(p.src):
		return p.errAt(open, "this f-string field is not closed (was the reply cut off?)")
	case p.at("}"):
	case p.at("!="):
		return p.afterValue("'}'")
	case p.at("!"):
		return p.errAt(p.pos, "conversions such as {x!r} are not supported in f-strings; write {x}")
	case p.at(":"):
		return p.errAt(p.pos, "format specs such as {x:.2f} are not supported in f-strings; write {x}")
	case p.at("=") && !p.at("=="):
		return p.errAt(p.pos, "{x=} is not supported in f-strings; write x={x}")
	default:
		return p.afterValue("'}'")
	}
	p.pos++
	p.depth--
	*parts = append(*parts, e)
	return nil
}

// notClosed reports </helpers> met inside a statement.
func (p *helperParser) notClosed(off int) *Error {
	if p.call != "" {
		return p.errAt(off, "the call to %s( is not closed before </helpers>; add )", p.call)
	}
	return p.errAt(off, "%s is not complete before </helpers>; close its brackets", p.ctx)
}

func (p *helperParser) toolList() string {
	names := make([]string, len(p.tools))
	for i, t := range p.tools {
		names[i] = t.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// separator reads what follows an item of a list, a dict or a call's
// arguments: a comma (comma true, consumed) or close (left for the caller
// to read); anything else, or the end of the text, is an error.
func (p *helperParser) separator(close byte) (comma bool, err *Error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return false, p.cutOff()
	}
	switch p.src[p.pos] {
	case ',':
		p.pos++
		return true, nil
	case close:
		return false, nil
	}
	return false, p.afterValue("',' or '" + string(close) + "'")
}
