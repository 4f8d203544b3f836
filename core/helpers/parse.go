package helpers

import (
	"encoding/json"
	"strings"
)

// Tool is what the parser needs to know of one of the agent's tools: its
// name, and its parameter schema, whose "properties", in the order the
// schema text writes them, name positional arguments (ParamOrder).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// Call is a call of a block of literal calls: the tool's name and its
// arguments as a JSON object, as written.
type Call struct {
	Name      string
	Arguments string
}

// Parsed is what the <helpers> blocks of a reply say. Either Calls (a
// block of literal calls, with Raw, the statement each was read from) or
// Program (statements that use names) is set, or neither (no block).
type Parsed struct {
	// Text is the reply without its blocks, trimmed: the message.
	Text    string
	Calls   []Call
	Raw     []string
	Program *Program
	// Warnings are what the parser accepted but noticed: one per argument
	// passed as its source text (Options.SourceText), in the order written.
	Warnings []string
}

// Options are the parser's switches. The zero value reads the format as
// the package doc describes it; Parse and ParseProgram use it.
type Options struct {
	// SourceText passes the value of a call's argument (name=value or a
	// positional one) that is a Python expression outside the subset as a
	// str holding its source text, as written and trimmed, instead of
	// refusing it, and says so in a warning (the SABRE design's rule,
	// "serialize complex expressions as strings"). It applies to a value
	// the parser refuses (an undefined name, a call of a function that is
	// not a tool, attributes and methods, other operators, comparisons,
	// conditions, comprehensions, lambdas, slices, ...) and to one the
	// evaluator refuses before any result is in (a subscript or + that
	// cannot be computed from the literals and names it reads). A value
	// that waits for a result is never replaced: its error, if any, comes
	// when the program runs. Still refused: text that is not a Python
	// expression (unbalanced brackets, a string not closed), a tool called
	// inside an argument or named without a call, true/false/null, the
	// size and nesting bounds, ** and *args, and assignments.
	SourceText bool
}

// Parse reads the helpers format: Python-style statements inside
// <helpers>...</helpers> blocks, in the subset the package doc describes.
//
//	<helpers>
//	user = find_user(name="Sarah", zip="10001")
//	orders(user_id=user["id"]); log_event(**{"kind": "x"})
//	</helpers>
//
// Statements end at a newline or ';' (newlines inside brackets do not
// count). The statements of all the blocks of a reply form one program. A
// program whose statements are all tool calls whose arguments use no name
// is a block of literal calls: it parses to Calls, one per statement, in
// order (a target such as user = is then ignored). Any other program
// parses to Program, which its host runs statement by statement (Run), and
// no Calls.
//
// The callee may be dotted (a tool named "a.b"). Arguments are keyword
// (name=value, where unlike Python the name may be a keyword such as from;
// or a dict after **) or positional; positional ones take the tool's
// parameter names (ParamOrder), so a positional argument needs a known
// tool. Literals are strings (single, double or triple quotes; r/u/f
// prefixes; the escapes \n \t \\ \' \" \xHH \uXXXX \UXXXXXXXX and octal),
// ints (decimal, 0x/0o/0b, underscores), floats, True/False/None, lists,
// tuples (as JSON arrays) and dicts with string keys. Integers stay
// integers in the JSON and floats keep a decimal point or exponent. A value
// that uses no name is computed here (1 + 2 is 3). Anything outside the
// subset is an *Error naming its line and column (Options.SourceText
// passes an argument outside it as its source text instead). A call to an
// unknown function is kept: the host's validator rejects it and names the
// tools.
func Parse(text string, tools []Tool) (Parsed, error) { return Options{}.Parse(text, tools) }

// Parse reads the helpers format as the package function Parse does, with
// o's switches.
func (o Options) Parse(text string, tools []Tool) (Parsed, error) {
	msg, prog, err := o.ParseProgram(text, tools)
	if err != nil {
		return Parsed{}, err
	}
	p := Parsed{Text: msg, Warnings: prog.warnings}
	if len(prog.stmts) == 0 {
		return p, nil
	}
	if calls, ok := prog.literalCalls(); ok {
		p.Calls = calls
		p.Raw = make([]string, len(calls))
		for i, st := range prog.stmts {
			p.Raw[i] = text[st.off:st.end]
		}
		return p, nil
	}
	if prog.calls == 0 {
		return Parsed{}, errAt(text, prog.stmts[0].off, "this <helpers> block calls no tool: a block runs tool calls (and assignments that prepare their arguments); call a tool, or reply without a block to give your answer")
	}
	p.Program = prog
	return p, nil
}

// ParseProgram reads the statements of every block of a reply as one
// program, whatever they are (a block of literal calls included), and the
// message around them (the reply without its blocks, trimmed).
func ParseProgram(text string, tools []Tool) (string, *Program, error) {
	return Options{}.ParseProgram(text, tools)
}

// ParseProgram reads a reply's program as the package function
// ParseProgram does, with o's switches.
func (o Options) ParseProgram(text string, tools []Tool) (string, *Program, error) {
	var msg strings.Builder
	hp := &helperParser{src: text, tools: tools, defined: map[string]bool{}, sourceText: o.SourceText}
	prog := &Program{}
	i := 0
	for {
		k := strings.Index(text[i:], Open)
		if k < 0 {
			msg.WriteString(text[i:])
			break
		}
		open := i + k
		msg.WriteString(text[i:open])
		hp.pos = open + len(Open)
		stmts, perr := hp.block(open)
		if perr != nil {
			return "", prog, perr
		}
		prog.stmts = append(prog.stmts, stmts...)
		i = hp.pos
	}
	for _, st := range prog.stmts {
		if st.call != nil {
			prog.calls++
		}
	}
	if o.SourceText {
		prog.staticSourceText(text)
		prog.warnings = prog.sourceWarnings(text)
	}
	return strings.TrimSpace(msg.String()), prog, nil
}

const (
	// Open starts a block.
	Open = "<helpers>"
	// Close ends a block.
	Close = "</helpers>"
	// maxHelperNesting bounds how deeply values nest.
	maxHelperNesting = 64
)

// helperParser reads the statements of <helpers> blocks; offsets are into
// the whole reply so messages give its line and column.
type helperParser struct {
	src    string
	pos    int
	depth  int // open brackets: a newline inside them does not end a statement
	nest   int // value nesting
	tools  []Tool
	call   string // the call being read, for messages
	callAt int
	// ctx names what is being read, for messages ("the call to f(...)").
	ctx string
	// defined holds the names assigned by the statements read so far.
	defined map[string]bool
	// sourceText is Options.SourceText.
	sourceText bool
}

// helperArg is an argument (or a dict member) as JSON: its name, its value
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

func (p *helperParser) errAt(off int, format string, args ...any) *Error {
	return errAt(p.src, off, format, args...)
}

// firmAt is errAt for a refusal that Options.SourceText keeps.
func (p *helperParser) firmAt(off int, format string, args ...any) *Error {
	e := errAt(p.src, off, format, args...)
	e.firm = true
	return e
}

func (p *helperParser) at(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }
func (p *helperParser) rest() string     { return p.src[p.pos:] }

func (p *helperParser) cutOff() *Error {
	if p.call == "" {
		return p.errAt(p.callAt, "the statement is not complete: the reply ended first (was it cut off?); finish it and end the block with </helpers>")
	}
	return p.errAt(p.callAt, "the call to %s( is not closed: the reply ended first (was it cut off?); close the call and end the block with </helpers>", p.call)
}

// block reads statements up to and including </helpers>.
func (p *helperParser) block(open int) ([]helperStmt, *Error) {
	var stmts []helperStmt
	for {
		p.skipBlank()
		if p.pos >= len(p.src) {
			return nil, p.errAt(open, "the <helpers> block opened here is not closed (was the reply cut off?); end it with </helpers> after the last call")
		}
		if p.at(Close) {
			p.pos += len(Close)
			return stmts, nil
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		s.end = p.pos
		stmts = append(stmts, s)
		if s.target != "" {
			p.defined[s.target] = true
		}
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != ';' && !p.at(Close) {
			if s.call == nil {
				return nil, p.afterValue("a new line or ;")
			}
			return nil, p.errAt(p.pos, "unexpected %s after the call to %s(...): write one statement per line (or separate statements with ;); to use a call's result, assign it (r = %s(...)) and use r in a later statement", quoteExcerpt(p.rest()), s.call.name, s.call.name)
		}
	}
}

// statement reads `[target =] callee(args)` or `target = value`.
func (p *helperParser) statement() (helperStmt, *Error) {
	at := p.pos
	s := helperStmt{off: at}
	p.call, p.callAt, p.ctx = "", at, "the statement"
	name, err := p.callee(`a tool call such as find_user(name="Sarah"), or an assignment such as user = find_user(name="Sarah")`)
	if err != nil {
		return s, err
	}
	p.skipSpace()
	if p.at("=") && !p.at("==") {
		if err := p.checkTarget(name, at); err != nil {
			return s, err
		}
		s.target = name
		p.pos++
		p.skipSpace()
		at = p.pos
		p.callAt, p.ctx = at, "the value of "+name
		save := p.pos
		callee, _ := p.callee("")
		p.skipSpace()
		if callee == "" || !p.at("(") || pythonKeywords[callee] {
			p.pos = save
			e, err := p.expr()
			if err != nil {
				return s, err
			}
			if s.expr, err = p.fold(e); err != nil {
				return s, err
			}
			return s, nil
		}
		name = callee
	}
	if !p.at("(") {
		switch {
		case p.pos >= len(p.src):
			return s, p.errAt(at, "the reply ended after %s (was it cut off?); write the whole statement and end the block with </helpers>", name)
		case pythonKeywords[name]:
			return s, p.errAt(at, "a <helpers> block holds tool calls and assignments, not Python statements such as %s", name)
		case pyOperatorRun(p.rest(), "+-*/%@&|^<>!~") != "" && strings.HasPrefix(strings.TrimLeft(p.rest(), "+-*/%@&|^<>!~"), "="):
			return s, p.errAt(p.pos, "augmented assignment (%s=) is not supported; write %s = %s ... with + only", pyOperatorRun(p.rest(), "+-*/%@&|^<>!~"), name, name)
		case p.at(","):
			return s, p.errAt(p.pos, "assigning several names at once is not supported; assign one name per statement")
		case p.at("["):
			return s, p.errAt(p.pos, "only a plain name can be assigned, and a statement is a tool call or name = value; %s[...] on its own does nothing", name)
		}
		return s, p.errAt(p.pos, "expected ( after %s: a statement is a tool call such as %s(arg=\"value\") or an assignment such as x = %s(...), found %s", name, name, name, quoteExcerpt(p.rest()))
	}
	p.call, p.callAt, p.ctx = name, at, "the call to "+name+"(...)"
	p.pos++
	p.depth++
	args, err := p.arguments()
	if err != nil {
		return s, err
	}
	s.call = &helperCall{name: name, args: args, off: at}
	return s, nil
}

// checkTarget refuses a name that cannot be assigned.
func (p *helperParser) checkTarget(name string, at int) *Error {
	if strings.Contains(name, ".") || pythonKeywords[name] {
		return p.errAt(at, "cannot assign to %s; write a plain variable name before =, or just the call", name)
	}
	if _, isTool := helperTool(p.tools, name); isTool {
		return p.errAt(at, "cannot assign to %s: it is the name of a tool; choose another name", name)
	}
	return nil
}

// callee reads a dotted name such as find_user or files.read. With what
// empty it reports a missing name by returning "".
func (p *helperParser) callee(what string) (string, *Error) {
	start := p.pos
	if p.ident() == "" {
		if what == "" {
			return "", nil
		}
		return "", p.errAt(start, "expected %s, found %s", what, quoteExcerpt(p.rest()))
	}
	for p.at(".") {
		p.pos++
		if p.ident() == "" {
			if what == "" {
				p.pos = start
				return "", nil
			}
			return "", p.errAt(p.pos, "expected a name after '.', found %s", quoteExcerpt(p.rest()))
		}
	}
	return p.src[start:p.pos], nil
}

// arguments reads the arguments after '(' through ')': positional ones
// first (named by the schema), then keyword ones, each in the order
// written.
func (p *helperParser) arguments() ([]helperCallArg, *Error) {
	var positional, keyword []helperCallArg
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.cutOff()
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
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				keyword = append(keyword, helperCallArg{val: e, off: off, spread: true})
				break
			}
			members, err := p.dict()
			if err != nil {
				return nil, err
			}
			for _, m := range members {
				v, err := p.fold(m.val)
				if err != nil {
					return nil, err
				}
				keyword = append(keyword, helperCallArg{key: m.key, val: v, off: m.off})
			}
		case p.at("*"):
			return nil, p.errAt(off, "*args unpacking is not supported; write each argument")
		default:
			key, isKeyword := p.keywordName()
			if !isKeyword && len(keyword) > 0 {
				return nil, p.errAt(off, "a positional argument cannot follow keyword arguments in %s(...); pass it by keyword (name=value)", p.call)
			}
			a, err := p.argValue()
			if err != nil {
				return nil, err
			}
			a.key, a.off = key, off
			if isKeyword {
				keyword = append(keyword, a)
			} else {
				positional = append(positional, a)
			}
			continue // argValue read the separator
		}
		if _, err := p.separator(')'); err != nil {
			return nil, err
		}
	}
	return p.namedArgs(positional, keyword)
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

// namedArgs names the positional arguments from the tool's schema and
// checks that no argument is given twice (as far as the text tells: the
// keys of a **value computed from names are checked when it runs).
func (p *helperParser) namedArgs(positional, keyword []helperCallArg) ([]helperCallArg, *Error) {
	var names []string
	if len(positional) > 0 {
		t, known := helperTool(p.tools, p.call)
		names = ParamOrder(t.Parameters)
		if len(positional) > len(names) {
			extra := positional[len(names)]
			switch {
			case !known:
				var all []string
				for _, t := range p.tools {
					all = append(all, t.Name)
				}
				return nil, p.errAt(extra.off, "%s is not one of the tools (%s), so its positional arguments cannot be matched to parameters; check the name and pass arguments by keyword", p.call, strings.Join(all, ", "))
			case len(names) == 0:
				return nil, p.errAt(extra.off, "%s takes no positional arguments; pass arguments by keyword (name=value)", p.call)
			}
			return nil, p.errAt(extra.off, "%s takes at most %d positional argument(s) (%s); pass the others by keyword (name=value)", p.call, len(names), strings.Join(names, ", "))
		}
	}
	all := make([]helperCallArg, 0, len(positional)+len(keyword))
	for i, a := range positional {
		a.key = names[i]
		all = append(all, a)
	}
	all = append(all, keyword...)
	seen := map[string]bool{}
	for _, a := range all {
		if a.spread {
			continue
		}
		if seen[a.key] {
			return nil, p.errAt(a.off, "%s(...) got two values for the argument %q", p.call, a.key)
		}
		seen[a.key] = true
	}
	return all, nil
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

func helperTool(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
