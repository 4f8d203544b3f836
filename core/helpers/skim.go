package helpers

// Recognizing a Python expression without evaluating it, for
// Options.SourceText: an argument outside the subset is passed as its
// source text only when it is a Python expression (Python 3.12's
// expression grammar: operators, comparisons, not/and/or, conditions,
// lambdas, comprehensions, calls, attributes, subscripts and slices,
// displays, strings with their prefixes and f-strings with their fields).
// Text that is not one, such as unbalanced brackets or a string not
// closed, stays a refusal. Precedence is not checked: it does not change
// where an expression ends. The recognizer is a little looser than Python
// in corners (it does not check that a target is assignable, or where
// await may stand); what it accepts is passed as text, never run.

// maxSkimDepth bounds how deeply a skimmed expression nests.
const maxSkimDepth = 200

// skimmer reads one Python expression at p.pos. end is where the last
// token read ends; tool is set when the expression calls one of the
// agent's tools.
type skimmer struct {
	p     *helperParser
	end   int
	depth int
	tool  bool
}

// skimArg reads, from p.pos, the value of a call's argument as Python
// writes it (a generator expression included), and reports where it ends.
// It fails when the text is not a Python expression, or calls a tool
// (that refusal is more use to the model than the call's text). p.pos is
// left anywhere.
func (p *helperParser) skimArg() (end int, ok bool) {
	s := &skimmer{p: p, end: p.pos}
	if !s.namedTest() {
		return 0, false
	}
	if t := s.peek(); t.isWord("for") || t.isWord("async") {
		if !s.compFor() {
			return 0, false
		}
	}
	if s.tool {
		return 0, false
	}
	return s.end, true
}

// binaryOperators join two operands (comparisons included; and, or, in,
// not in, is and is not are words).
var binaryOperators = []string{"+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!="}

// deeper counts one more level of nesting, and reports whether it is
// within maxSkimDepth; leave undoes it.
func (s *skimmer) deeper() bool {
	s.depth++
	return s.depth <= maxSkimDepth
}

func (s *skimmer) leave() { s.depth-- }

// namedTest reads NAME := test, or a test.
func (s *skimmer) namedTest() bool {
	if t := s.peek(); t.kind == 'n' && !pythonKeywords[t.text] {
		save, end := s.p.pos, s.end
		s.take(t)
		if w := s.peek(); w.isOp(":=") {
			s.take(w)
			return s.test()
		}
		s.p.pos, s.end = save, end
	}
	return s.test()
}

// test reads a lambda, or an operand chain with an optional condition
// (a if b else c).
func (s *skimmer) test() bool {
	defer s.leave()
	switch {
	case !s.deeper():
		return false
	case s.word("lambda"):
		return s.lambdaParams() && s.expect(":") && s.test()
	case !s.chain():
		return false
	case s.word("if"):
		return s.chain() && s.word("else") && s.test()
	}
	return true
}

// chain reads operands joined by binary operators, comparisons, and, or:
// each operand is a primary after prefixes (- + ~ await, and not where
// Python allows it: at the start and after and, or).
func (s *skimmer) chain() bool {
	notOK := true
	for {
		for {
			t := s.peek()
			if !(t.isWord("not") && notOK) && !t.isOp("-", "+", "~") && !t.isWord("await") {
				break
			}
			notOK = notOK && t.isWord("not")
			s.take(t)
		}
		if !s.primary() {
			return false
		}
		t := s.peek()
		switch {
		case t.isWord("and"), t.isWord("or"):
			notOK = true
		case t.isWord("in"), t.isOp(binaryOperators...):
			notOK = false
		case t.isWord("is"):
			s.take(t)
			s.word("not")
			notOK = false
			continue
		case t.isWord("not"):
			s.take(t)
			if !s.word("in") {
				return false
			}
			notOK = false
			continue
		default:
			return true
		}
		s.take(t)
	}
}

// primary reads an atom and its trailers: .name, (arguments), [subscripts].
// A dotted name called is checked against the tools.
func (s *skimmer) primary() bool {
	name, ok := s.atom()
	if !ok {
		return false
	}
	for {
		t := s.peek()
		switch {
		case t.isOp("."):
			s.take(t)
			n := s.peek()
			if n.kind != 'n' || pythonKeywords[n.text] {
				return false
			}
			s.take(n)
			if name != "" {
				name += "." + n.text
			}
		case t.isOp("("):
			if _, isTool := helperTool(s.p.tools, name); isTool && name != "" {
				s.tool = true
			}
			s.take(t)
			if !s.callArgs() {
				return false
			}
			name = ""
		case t.isOp("["):
			s.take(t)
			if !s.subscripts() {
				return false
			}
			name = ""
		default:
			return true
		}
	}
}

// atom reads a name (returned, for primary), a number, strings, ..., or a
// parenthesised expression, tuple, list, dict or set, with their
// comprehensions.
func (s *skimmer) atom() (string, bool) {
	defer s.leave()
	if !s.deeper() {
		return "", false
	}
	t := s.peek()
	switch t.kind {
	case 'n':
		switch {
		case t.text == "True" || t.text == "False" || t.text == "None":
			s.take(t)
			return "", true
		case pythonKeywords[t.text]:
			return "", false
		}
		s.take(t)
		return t.text, true
	case '0':
		s.take(t)
		return "", true
	case '"':
		for t.kind == '"' {
			s.p.pos = t.off
			if !s.str() {
				return "", false
			}
			t = s.peek()
		}
		return "", true
	case 'o':
		s.take(t)
		switch t.text {
		case "...":
			return "", true
		case "(":
			return "", s.display(")")
		case "[":
			return "", s.display("]")
		case "{":
			return "", s.braces()
		}
	}
	return "", false
}

// display reads the inside of (...) or [...] after its bracket, and the
// closing bracket: nothing, one item and a comprehension, or items
// separated by commas.
func (s *skimmer) display(close string) bool {
	if s.expect(close) {
		return true
	}
	if !s.starItem() {
		return false
	}
	if t := s.peek(); t.isWord("for") || t.isWord("async") {
		return s.compFor() && s.expect(close)
	}
	return s.items(close, s.starItem)
}

// items reads ", item" until close, a trailing comma allowed.
func (s *skimmer) items(close string, item func() bool) bool {
	for {
		if s.expect(close) {
			return true
		}
		if !s.expect(",") {
			return false
		}
		if s.expect(close) {
			return true
		}
		if !item() {
			return false
		}
	}
}

// starItem reads *operand or a (named) test.
func (s *skimmer) starItem() bool {
	if s.expect("*") {
		return s.chain()
	}
	return s.namedTest()
}

// braces reads the inside of {...} after '{', and '}': a dict (key: value
// and **mapping items) or a set, either with a comprehension.
func (s *skimmer) braces() bool {
	if s.expect("}") {
		return true
	}
	dictItem := func() bool {
		if s.expect("**") {
			return s.chain()
		}
		return s.test() && s.expect(":") && s.test()
	}
	isDict := false
	switch t := s.peek(); {
	case t.isOp("**"):
		if !dictItem() {
			return false
		}
		isDict = true
	case t.isOp("*"):
		if !s.starItem() {
			return false
		}
	default:
		if !s.test() {
			return false
		}
		if s.expect(":") {
			if !s.test() {
				return false
			}
			isDict = true
		}
	}
	if f := s.peek(); f.isWord("for") || f.isWord("async") {
		return s.compFor() && s.expect("}")
	}
	if isDict {
		return s.items("}", dictItem)
	}
	return s.items("}", s.starItem)
}

// compFor reads the for ... in ... [if ...] clauses of a comprehension.
func (s *skimmer) compFor() bool {
	for {
		async := s.word("async")
		if !s.word("for") {
			return !async
		}
		if !s.targets() || !s.word("in") || !s.chain() {
			return false
		}
		for s.word("if") {
			if !s.chain() {
				return false
			}
		}
	}
}

// targets reads the targets of a for clause, up to in.
func (s *skimmer) targets() bool {
	for {
		s.expect("*")
		if !s.primary() {
			return false
		}
		if !s.expect(",") {
			return true
		}
		if t := s.peek(); t.isWord("in") {
			return true
		}
	}
}

// callArgs reads a call's arguments after '(', and ')'.
func (s *skimmer) callArgs() bool {
	arg := func() bool {
		t := s.peek()
		switch {
		case t.isOp("*", "**"):
			s.take(t)
			return s.test()
		case t.kind == 'n' && !pythonKeywords[t.text]:
			save, end := s.p.pos, s.end
			s.take(t)
			if e := s.peek(); e.isOp("=") {
				s.take(e)
				return s.test()
			}
			s.p.pos, s.end = save, end
		}
		if !s.namedTest() {
			return false
		}
		if f := s.peek(); f.isWord("for") || f.isWord("async") {
			return s.compFor()
		}
		return true
	}
	if s.expect(")") {
		return true
	}
	return arg() && s.items(")", arg)
}

// subscripts reads the inside of [...] after '[', and ']': indexes and
// slices (a:b:c, each part optional) separated by commas.
func (s *skimmer) subscripts() bool {
	part := func() bool {
		if t := s.peek(); t.isOp(":", ",", "]") {
			return true
		}
		return s.namedTest()
	}
	item := func() bool {
		if s.expect("*") {
			return s.chain()
		}
		if t := s.peek(); t.isOp(",", "]") || !part() {
			return false
		}
		for range 2 {
			if !s.expect(":") {
				return true
			}
			if !part() {
				return false
			}
		}
		return true
	}
	return item() && s.items("]", item)
}

// lambdaParams reads a lambda's parameters, up to its ':'.
func (s *skimmer) lambdaParams() bool {
	for {
		t := s.peek()
		if t.isOp(":") {
			return true
		}
		switch {
		case t.isOp("/"):
			s.take(t)
		case t.isOp("*", "**"):
			s.take(t)
			if n := s.peek(); n.kind == 'n' && !pythonKeywords[n.text] {
				s.take(n)
			}
		case t.kind == 'n' && !pythonKeywords[t.text]:
			s.take(t)
			if d := s.peek(); d.isOp("=") {
				s.take(d)
				if !s.test() {
					return false
				}
			}
		default:
			return false
		}
		if !s.expect(",") {
			if t := s.peek(); !t.isOp(":") {
				return false
			}
		}
	}
}
