package core

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseHelpers reads the helpers format: Python-style call statements inside
// <helpers>...</helpers> blocks.
//
//	<helpers>
//	user = find_user(name="Sarah", zip="10001")  # the target is ignored
//	search("flights", 3); log_event(**{"kind": "x"})
//	</helpers>
//
// Statements end at a newline or ';' (newlines inside brackets do not count)
// and hold one call each, with an optional `name =` in front. The callee may
// be dotted (a tool named "a.b"). Arguments are keyword (name=value, where
// unlike Python the name may be a keyword such as from; or a literal dict
// after **) or positional; positional ones take the tool's
// parameter names in the order its schema's "properties" are written, so a
// positional argument needs a known tool. Values are literals only: strings
// (single, double or triple quotes; r/u prefixes; the escapes \n \t \\ \' \"
// \xHH \uXXXX \UXXXXXXXX and octal), ints (decimal, 0x/0o/0b, underscores),
// floats, True/False/None, lists, tuples (as JSON arrays) and dicts with
// string keys. Anything else (a variable, an expression, a nested call, an
// attribute) is an error naming its line and column. Integers stay integers
// in the JSON and floats keep a decimal point or exponent. A call to an
// unknown function is kept: the validator rejects it and names the tools.
// The reply without its blocks, trimmed, is the message.
func parseHelpers(text string, tools []Tool) (Parsed, error) {
	var p Parsed
	var msg strings.Builder
	hp := &helperParser{src: text, tools: tools}
	i := 0
	for {
		k := strings.Index(text[i:], helpersOpen)
		if k < 0 {
			msg.WriteString(text[i:])
			break
		}
		open := i + k
		msg.WriteString(text[i:open])
		hp.pos = open + len(helpersOpen)
		calls, perr := hp.block(open)
		if perr != nil {
			return Parsed{}, perr
		}
		p.Calls = append(p.Calls, calls...)
		i = hp.pos
	}
	p.Text = strings.TrimSpace(msg.String())
	return p, nil
}

const (
	helpersOpen  = "<helpers>"
	helpersClose = "</helpers>"
	// maxHelperNesting bounds how deeply literals nest.
	maxHelperNesting = 64
)

// helperParser reads the statements of <helpers> blocks; offsets are into
// the whole reply so messages give its line and column.
type helperParser struct {
	src    string
	pos    int
	depth  int // open brackets: a newline inside them does not end a statement
	nest   int // literal nesting
	tools  []Tool
	call   string // the call being read, for messages
	callAt int
}

// helperArg is an argument (or a dict member): its name, its value as JSON
// and where it was written.
type helperArg struct {
	key, json string
	off       int
}

// pyLit is a literal read as JSON; str is the value of a string literal.
type pyLit struct {
	json  string
	str   string
	isStr bool
}

func (p *helperParser) errAt(off int, format string, args ...any) *ParseError {
	return parseErrAt(FormatHelpers, p.src, off, format, args...)
}

func (p *helperParser) at(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }
func (p *helperParser) rest() string     { return p.src[p.pos:] }

func (p *helperParser) cutOff() *ParseError {
	return p.errAt(p.callAt, "the call to %s( is not closed: the reply ended first (was it cut off?); close the call and end the block with </helpers>", p.call)
}

// block reads statements up to and including </helpers>.
func (p *helperParser) block(open int) ([]NativeCall, *ParseError) {
	var calls []NativeCall
	for {
		p.skipBlank()
		if p.pos >= len(p.src) {
			return nil, p.errAt(open, "the <helpers> block opened here is not closed (was the reply cut off?); end it with </helpers> after the last call")
		}
		if p.at(helpersClose) {
			p.pos += len(helpersClose)
			return calls, nil
		}
		c, err := p.statement()
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != ';' && !p.at(helpersClose) {
			return nil, p.errAt(p.pos, "unexpected %s after the call to %s(...): write one call per line (or separate calls with ;); a call's result cannot be used in an expression", quoteExcerpt(p.rest()), c.Name)
		}
	}
}

// statement reads `[target =] callee(args)`.
func (p *helperParser) statement() (NativeCall, *ParseError) {
	at := p.pos
	name, err := p.callee(`a tool call such as find_user(name="Sarah")`)
	if err != nil {
		return NativeCall{}, err
	}
	p.skipSpace()
	if p.at("=") && !p.at("==") {
		if strings.Contains(name, ".") || pythonKeywords[name] {
			return NativeCall{}, p.errAt(at, "cannot assign to %s; write a plain variable name before =, or just the call", name)
		}
		p.pos++
		p.skipSpace()
		at = p.pos
		if name, err = p.callee("a tool call after " + name + " ="); err != nil {
			return NativeCall{}, err
		}
		p.skipSpace()
	}
	if !p.at("(") {
		switch {
		case p.pos >= len(p.src):
			return NativeCall{}, p.errAt(at, "the reply ended after %s (was it cut off?); write the whole call and end the block with </helpers>", name)
		case pythonKeywords[name]:
			return NativeCall{}, p.errAt(at, "a <helpers> block holds only tool calls, not Python statements such as %s", name)
		}
		return NativeCall{}, p.errAt(p.pos, "expected ( after %s: a <helpers> block holds only tool calls such as %s(arg=\"value\"), found %s", name, name, quoteExcerpt(p.rest()))
	}
	p.call, p.callAt = name, at
	p.pos++
	p.depth++
	args, err := p.arguments()
	if err != nil {
		return NativeCall{}, err
	}
	return NativeCall{Name: name, Arguments: args}, nil
}

// callee reads a dotted name such as find_user or files.read.
func (p *helperParser) callee(what string) (string, *ParseError) {
	start := p.pos
	if p.ident() == "" {
		return "", p.errAt(start, "expected %s, found %s", what, quoteExcerpt(p.rest()))
	}
	for p.at(".") {
		p.pos++
		if p.ident() == "" {
			return "", p.errAt(p.pos, "expected a name after '.', found %s", quoteExcerpt(p.rest()))
		}
	}
	return p.src[start:p.pos], nil
}

// arguments reads the arguments after '(' through ')' and returns them as a
// JSON object: positional ones first (named by the schema), then keyword
// ones, each in the order written.
func (p *helperParser) arguments() (string, *ParseError) {
	var positional, keyword []helperArg
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return "", p.cutOff()
		}
		if p.src[p.pos] == ')' {
			p.pos++
			p.depth--
			break
		}
		off := p.pos
		switch {
		case p.at("**"):
			p.pos += 2
			p.skipSpace()
			if !p.at("{") {
				return "", p.errAt(p.pos, `** must be followed by a dict literal such as **{"key": "value"}, found %s`, quoteExcerpt(p.rest()))
			}
			members, err := p.dict()
			if err != nil {
				return "", err
			}
			keyword = append(keyword, members...)
		case p.at("*"):
			return "", p.errAt(off, "*args unpacking is not supported; write each argument")
		default:
			key, isKeyword := p.keywordName()
			if !isKeyword && len(keyword) > 0 {
				return "", p.errAt(off, "a positional argument cannot follow keyword arguments in %s(...); pass it by keyword (name=value)", p.call)
			}
			v, err := p.value()
			if err != nil {
				return "", err
			}
			if isKeyword {
				keyword = append(keyword, helperArg{key: key, json: v.json, off: off})
			} else {
				positional = append(positional, helperArg{json: v.json, off: off})
			}
		}
		p.skipSpace()
		if p.pos >= len(p.src) {
			return "", p.cutOff()
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ')':
		default:
			return "", p.afterValue("',' or ')'")
		}
	}
	return p.argsObject(positional, keyword)
}

// keywordName reads `name =` if that is what comes next. Unlike Python it
// takes keywords as names too (from="x"), as schemas use them.
func (p *helperParser) keywordName() (string, bool) {
	save := p.pos
	name := p.ident()
	if name != "" {
		p.skipSpace()
		if p.at("=") && !p.at("==") {
			p.pos++
			return name, true
		}
	}
	p.pos = save
	return "", false
}

// argsObject names the positional arguments from the tool's schema and
// writes every argument into one JSON object.
func (p *helperParser) argsObject(positional, keyword []helperArg) (string, *ParseError) {
	var names []string
	if len(positional) > 0 {
		t, known := helperTool(p.tools, p.call)
		names = helperParamOrder(t.Parameters)
		if len(positional) > len(names) {
			extra := positional[len(names)]
			switch {
			case !known:
				var all []string
				for _, t := range p.tools {
					all = append(all, t.Name)
				}
				return "", p.errAt(extra.off, "%s is not one of the tools (%s), so its positional arguments cannot be matched to parameters; check the name and pass arguments by keyword", p.call, strings.Join(all, ", "))
			case len(names) == 0:
				return "", p.errAt(extra.off, "%s takes no positional arguments; pass arguments by keyword (name=value)", p.call)
			}
			return "", p.errAt(extra.off, "%s takes at most %d positional argument(s) (%s); pass the others by keyword (name=value)", p.call, len(names), strings.Join(names, ", "))
		}
	}
	all := make([]helperArg, 0, len(positional)+len(keyword))
	for i, a := range positional {
		a.key = names[i]
		all = append(all, a)
	}
	all = append(all, keyword...)
	seen := map[string]bool{}
	for _, a := range all {
		if seen[a.key] {
			return "", p.errAt(a.off, "%s(...) got two values for the argument %q", p.call, a.key)
		}
		seen[a.key] = true
	}
	return membersJSON(all), nil
}

func membersJSON(members []helperArg) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		appendJSONString(&b, m.key)
		b.WriteByte(':')
		b.WriteString(m.json)
	}
	b.WriteByte('}')
	return b.String()
}

// value reads one literal.
func (p *helperParser) value() (pyLit, *ParseError) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return pyLit{}, p.cutOff()
	}
	if p.nest >= maxHelperNesting {
		return pyLit{}, p.errAt(p.pos, "values are nested more than %d levels deep", maxHelperNesting)
	}
	off := p.pos
	c := p.src[p.pos]
	switch {
	case c == '"' || c == '\'':
		return p.stringLits()
	case pyDigit(c) || (c == '.' && p.pos+1 < len(p.src) && pyDigit(p.src[p.pos+1])):
		return p.number("", off)
	case c == '-' || c == '+':
		p.pos++
		p.skipSpace()
		if p.pos < len(p.src) && (pyDigit(p.src[p.pos]) || (p.src[p.pos] == '.' && p.pos+1 < len(p.src) && pyDigit(p.src[p.pos+1]))) {
			return p.number(string(c), off)
		}
		return pyLit{}, p.errAt(off, "%c must be followed by a number: arguments must be literal values, not expressions", c)
	case c == '[':
		return p.sequence(']')
	case c == '(':
		return p.sequence(')')
	case c == '{':
		members, err := p.dict()
		if err != nil {
			return pyLit{}, err
		}
		return pyLit{json: membersJSON(members)}, nil
	case p.at(helpersClose):
		return pyLit{}, p.errAt(off, "the call to %s( is not closed before </helpers>; add )", p.call)
	}
	if _, ok := p.stringPrefix(); ok {
		return p.stringLits()
	}
	name := p.ident()
	switch name {
	case "":
		return pyLit{}, p.errAt(off, "expected a value, found %s: arguments must be literals (strings, numbers, True/False/None, lists, dicts, tuples)", quoteExcerpt(p.rest()))
	case "True":
		return pyLit{json: "true"}, nil
	case "False":
		return pyLit{json: "false"}, nil
	case "None":
		return pyLit{json: "null"}, nil
	case "true", "false", "null":
		return pyLit{}, p.errAt(off, "%s is not Python; write %s", name, map[string]string{"true": "True", "false": "False", "null": "None"}[name])
	}
	if pythonKeywords[name] {
		return pyLit{}, p.errAt(off, "found the keyword %s: arguments must be literal values, not expressions", name)
	}
	p.skipSpace()
	switch {
	case p.at("("):
		return pyLit{}, p.errAt(off, "the call %s(...) inside the arguments of %s is not allowed: calls cannot be nested; make it a separate call (its result comes back in the next turn)", name, p.call)
	case p.at("."):
		return pyLit{}, p.errAt(off, "%s.…: attribute access is not allowed; arguments must be literal values", name)
	}
	return pyLit{}, p.errAt(off, "%s is a variable: arguments must be literal values (strings, numbers, True/False/None, lists, dicts, tuples); write the value itself (results of calls come back in the next turn)", name)
}

// afterValue explains what is wrong with the text after a value where
// expected (such as "',' or ')'") should come.
func (p *helperParser) afterValue(expected string) *ParseError {
	off := p.pos
	rest := p.rest()
	if p.at(helpersClose) {
		return p.errAt(off, "the call to %s( is not closed before </helpers>; add )", p.call)
	}
	if op := pyOperatorRun(rest, "+-*/%@&|^<>=!~"); op != "" {
		return p.errAt(off, "found the operator %s: arguments must be literal values, not expressions; compute the value yourself and write the result", op)
	}
	switch rest[0] {
	case '.':
		return p.errAt(off, "attribute access or a method call on a value is not allowed; write the final value")
	case '(':
		return p.errAt(off, "a value cannot be called; arguments must be literal values")
	case '[':
		return p.errAt(off, "indexing is not allowed; write the final value")
	}
	save := p.pos
	word := p.ident()
	p.pos = save
	if pythonKeywords[word] {
		return p.errAt(off, "found %s: arguments must be literal values, not expressions", word)
	}
	return p.errAt(off, "expected %s in the call to %s(...), found %s", expected, p.call, quoteExcerpt(rest))
}

// sequence reads a list, or a tuple or parenthesised value (close is ')');
// lists and tuples become JSON arrays.
func (p *helperParser) sequence(close byte) (pyLit, *ParseError) {
	p.pos++
	p.depth++
	p.nest++
	defer func() { p.nest-- }()
	var items []string
	var last pyLit
	comma := false
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return pyLit{}, p.cutOff()
		}
		if p.src[p.pos] == close {
			p.pos++
			p.depth--
			break
		}
		v, err := p.value()
		if err != nil {
			return pyLit{}, err
		}
		items, last = append(items, v.json), v
		p.skipSpace()
		if p.pos >= len(p.src) {
			return pyLit{}, p.cutOff()
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
			comma = true
		case close:
		default:
			return pyLit{}, p.afterValue("',' or '" + string(close) + "'")
		}
	}
	if close == ')' && len(items) == 1 && !comma {
		return last, nil // (x) is x, not a tuple
	}
	return pyLit{json: "[" + strings.Join(items, ",") + "]"}, nil
}

// dict reads a dict literal with string keys.
func (p *helperParser) dict() ([]helperArg, *ParseError) {
	p.pos++
	p.depth++
	p.nest++
	defer func() { p.nest-- }()
	var members []helperArg
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
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		if !k.isStr {
			return nil, p.errAt(koff, "dict keys must be strings, found %s", k.json)
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
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if seen[k.str] {
			return nil, p.errAt(koff, "the key %q appears twice in a dict", k.str)
		}
		seen[k.str] = true
		members = append(members, helperArg{key: k.str, json: v.json, off: koff})
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.cutOff()
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
		default:
			return nil, p.afterValue("',' or '}'")
		}
	}
}

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
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && !p.at(helpersClose) {
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

// isPyIdentifier reports whether s can be written as a keyword argument name.
func isPyIdentifier(s string) bool {
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

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

func helperTool(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// helperParamOrder lists the names under a schema's "properties" in the
// order the schema text writes them (a token walk, not a map, keeps it).
func helperParamOrder(schema json.RawMessage) []string {
	if !json.Valid(schema) {
		return nil
	}
	for _, m := range jsonMembers(string(schema)) {
		if m.key == "properties" && strings.HasPrefix(m.raw, "{") {
			var names []string
			for _, prop := range jsonMembers(m.raw) {
				names = append(names, prop.key)
			}
			return names
		}
	}
	return nil
}
