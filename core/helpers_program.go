package core

import "strings"

// helperProgram is what the <helpers> blocks of one reply say: statements,
// run in order by the core (helpers_run.go; ADR 0016). This is the subset
// of Python a block may hold, as agent authors and models are told
// (ToolDocs writes it into the system prompt):
//
// Statements, one per line (or separated by ;):
//
//	tool(arg=value, ...)         a tool call
//	name = tool(arg=value, ...)  a tool call whose result is bound to name
//	name = value                 an assignment
//
// Values:
//
//   - literals: strings (with r and f prefixes), numbers, True, False,
//     None, lists, tuples and dicts with string keys;
//   - a name bound by an earlier statement (of any block of the reply);
//   - x[key]: a dict's member or a list's item (negative indexes count
//     from the end);
//   - a + b: two strings joined, or two numbers added;
//   - f"text {value} text": a value written as text.
//
// Nothing else: no nested calls (f(g(x))), no calls of a call's result,
// no attributes or methods, no other operators, no conditions, loops,
// comprehensions, slices, imports or definitions. Each such construct is
// refused before anything runs, with a correction naming it, its line and
// its column.
//
// Values are JSON values (null, booleans, numbers, strings, arrays,
// objects). A tool's result is its output text, a str: passed as an
// argument, joined with + or written in an f-string it is that text. A
// subscript reads the result as JSON, decoded as the core decodes call
// arguments (one JSON value, nothing after it, numbers kept exactly as
// written), so user["id"] works when find_user returned {"id": 42, ...}.
// The result read is the one the model reads too, cut to the tool's
// max_result_bytes. The rules for numbers: integers stay integers of any
// size; a + b of two numbers is exact (integers add as integers; with a
// decimal the sum is exact in decimal, so 0.1 + 0.2 is 0.3); in an f-string
// a number is written exactly as it was written in its JSON or literal
// (1.50 stays 1.50, 12345678901234567890 is not rounded), True, False and
// None as Python writes them, and a list or dict as compact JSON with its
// keys sorted.
//
// A statement that cannot be computed (a subscript on a result that is not
// JSON, a missing key, an index out of range, + on a str and a number, a
// call whose computed arguments its schema refuses, a name bound to a call
// that failed) stops the block: the calls made before it keep their results,
// the model reads those and an error naming the statement and its line, and
// the statements from it on do not run. Errors that do not depend on a
// result are found before the block runs and are corrections.
type helperProgram struct {
	stmts []helperStmt
	calls int // how many statements are calls
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
// are computed when the call runs.
type helperCallArg struct {
	key    string
	val    hexpr
	off    int
	spread bool
}

// literalCalls turns a program of calls whose arguments use no names into
// the calls the helpers format always gave, byte for byte.
func (prog *helperProgram) literalCalls() ([]NativeCall, bool) {
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
	calls := make([]NativeCall, len(prog.stmts))
	for i, st := range prog.stmts {
		members := make([]helperArg, len(st.call.args))
		for j, a := range st.call.args {
			members[j] = helperArg{key: a.key, json: literalJSON(a.val), off: a.off}
		}
		calls[i] = NativeCall{Name: st.call.name, Arguments: membersJSON(members)}
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
func (p *helperParser) fold(e hexpr) (hexpr, *ParseError) {
	var err *ParseError
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
		return nil, p.errAt(ev.off, "%s", ev.msg)
	}
	return &hLit{lit: litOf(v.v), off: e.offset()}, nil
}
