package helpers

import "strings"

// Program is what the <helpers> blocks of one reply say: statements, run in
// order (Run). The subset of Python they may use, the values and the error
// rules are in the package doc and ADR 0016. A Program is not changed by
// running it.
type Program struct {
	stmts []helperStmt
	calls int // how many statements are calls
	// warnings are Parsed.Warnings: the arguments passed as their source
	// text (Options.SourceText).
	warnings []string
}

// helperStmt is one statement: a call (with an optional target) or an
// assignment of expr to target. off and end delimit its text in the reply.
type helperStmt struct {
	target   string
	call     *helperCall
	expr     hexpr
	off, end int
}

// helperCall is a call statement's callee and arguments, positional ones
// already named after the tool's parameters.
type helperCall struct {
	name string
	args []helperCallArg
	off  int
}

// helperCallArg is one argument: key=val, or (spread) **val, whose members
// are computed when the call runs. off is where the argument begins (its
// name), at and end delimit its value's text; source marks a value passed
// as that text (Options.SourceText).
type helperCallArg struct {
	key     string
	val     hexpr
	off     int
	at, end int
	spread  bool
	source  bool
}

// Calls is how many of the program's statements are tool calls.
func (prog *Program) Calls() int { return prog.calls }

// Warnings are what the parser accepted but noticed: one per argument
// passed as its source text (Options.SourceText), in the order written.
func (prog *Program) Warnings() []string { return prog.warnings }

// literalCalls turns a program of calls whose arguments use no names into
// the calls the helpers format always gave, byte for byte.
func (prog *Program) literalCalls() ([]Call, bool) {
	for _, st := range prog.stmts {
		if st.call == nil {
			return nil, false
		}
		for _, a := range st.call.args {
			if a.spread || usesNames(a.val) {
				return nil, false
			}
		}
	}
	calls := make([]Call, len(prog.stmts))
	for i, st := range prog.stmts {
		members := make([]helperArg, len(st.call.args))
		for j, a := range st.call.args {
			members[j] = helperArg{key: a.key, json: literalJSON(a.val), off: a.off}
		}
		calls[i] = Call{Name: st.call.name, Arguments: membersJSON(members)}
	}
	return calls, true
}

// literalJSON writes a folded value that uses no names as JSON.
func literalJSON(e hexpr) string {
	switch e := e.(type) {
	case *hLit:
		return e.lit.json
	case *hList:
		items := make([]string, len(e.items))
		for i, it := range e.items {
			items[i] = literalJSON(it)
		}
		return "[" + strings.Join(items, ",") + "]"
	case *hDict:
		members := make([]helperArg, len(e.members))
		for i, m := range e.members {
			members[i] = helperArg{key: m.key, json: literalJSON(m.val)}
		}
		return membersJSON(members)
	}
	return "null" // not reached: fold leaves only literals, lists and dicts without names
}

// usesNames reports whether e reads a name.
func usesNames(e hexpr) bool {
	switch e := e.(type) {
	case *hName:
		return true
	case *hList:
		for _, it := range e.items {
			if usesNames(it) {
				return true
			}
		}
	case *hDict:
		for _, m := range e.members {
			if usesNames(m.val) {
				return true
			}
		}
	case *hIndex:
		return usesNames(e.x) || usesNames(e.key)
	case *hSum:
		for _, t := range e.terms {
			if usesNames(t) {
				return true
			}
		}
	case *hFString:
		for _, part := range e.parts {
			if usesNames(part) {
				return true
			}
		}
	}
	return false
}

// fold computes the parts of e that use no names (a + b of literals, a
// subscript of a literal, an f-string without names), so that what is left
// to run reads names, and an error in a constant is found while parsing.
func (p *helperParser) fold(e hexpr) (hexpr, *Error) {
	var err *Error
	switch e := e.(type) {
	case *hList:
		for i := range e.items {
			if e.items[i], err = p.fold(e.items[i]); err != nil {
				return nil, err
			}
		}
		return e, nil
	case *hDict:
		for i := range e.members {
			if e.members[i].val, err = p.fold(e.members[i].val); err != nil {
				return nil, err
			}
		}
		return e, nil
	case *hIndex:
		if e.x, err = p.fold(e.x); err != nil {
			return nil, err
		}
		if e.key, err = p.fold(e.key); err != nil {
			return nil, err
		}
	case *hSum:
		for i := range e.terms {
			if e.terms[i], err = p.fold(e.terms[i]); err != nil {
				return nil, err
			}
		}
	case *hFString:
		for i := range e.parts {
			if e.parts[i], err = p.fold(e.parts[i]); err != nil {
				return nil, err
			}
		}
	default:
		return e, nil
	}
	if usesNames(e) {
		return e, nil
	}
	v, eerr := evalHelper(e, nil)
	if eerr != nil {
		ev := eerr.(*evalError) // with no names, nothing waits for a result
		if ev.limit {
			return nil, p.firmAt(ev.off, "%s", ev.msg)
		}
		return nil, p.errAt(ev.off, "%s", ev.msg)
	}
	return &hLit{lit: litOf(v.v), off: e.offset()}, nil
}
