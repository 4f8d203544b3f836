package helpers

// Arguments passed as their source text (Options.SourceText): the SABRE
// design's rule for an expression it cannot evaluate. The parser replaces
// the values it refuses (argValue, with skimArg deciding that the text is
// a Python expression); staticSourceText replaces those the evaluator
// refuses before any result is in; sourceWarnings says which.

import "fmt"

// argValue reads the value of an argument and the separator after it (a
// comma, or the ')' left for the caller). With Options.SourceText, a value
// outside the subset that is a Python expression is a str holding its
// source text (skimArg); any other error is the subset's.
func (p *helperParser) argValue() (helperCallArg, *Error) {
	p.skipSpace()
	start, depth, nest, ctx := p.pos, p.depth, p.nest, p.ctx
	e, err := p.expr()
	end := p.pos
	if err == nil {
		e, err = p.fold(e)
	}
	if err == nil {
		_, err = p.separator(')')
	}
	if err == nil {
		return helperCallArg{val: e, at: start, end: end}, nil
	}
	if !p.sourceText || err.firm {
		return helperCallArg{}, err
	}
	p.pos, p.depth, p.nest, p.ctx = start, depth, nest, ctx
	end, ok := p.skimArg()
	if !ok {
		return helperCallArg{}, err
	}
	p.pos = end
	if _, serr := p.separator(')'); serr != nil {
		return helperCallArg{}, err
	}
	return helperCallArg{val: strLit(p.src[start:end], start), at: start, end: end, source: true}, nil
}

// staticSourceText replaces, in a program just parsed, each argument whose
// value Check would refuse whatever the results (a subscript or + that
// cannot be computed from the literals and names it reads) with its source
// text. The names are bound as Check binds them: an assignment's value,
// or a placeholder for a call's result or a value that cannot be computed;
// a value that reads a placeholder waits for a result and is left alone.
// It depends on the program's text alone, so every parse of a reply gives
// the same program, as a run that resumes parses it again.
func (prog *Program) staticSourceText(text string) {
	env := map[string]hval{}
	for _, st := range prog.stmts {
		if st.call == nil {
			if v, err := evalHelper(st.expr, env); err == nil {
				env[st.target] = v
			} else {
				bind(env, st.target, &callResult{pending: true})
			}
			continue
		}
		for i, a := range st.call.args {
			// The members of a **{...} dict have no text of their own
			// (end is 0): they are not replaced.
			if a.spread || a.source || a.end <= a.at {
				continue
			}
			_, err := plainValue(a.val, env)
			if ev, ok := err.(*evalError); ok && !ev.limit {
				st.call.args[i].val = strLit(text[a.at:a.end], a.at)
				st.call.args[i].source = true
			}
		}
		bind(env, st.target, &callResult{tool: st.call.name, pending: true})
	}
}

// sourceWarnings is a warning for each argument passed as its source text,
// in the order written: its line, its call and the text.
func (prog *Program) sourceWarnings(text string) []string {
	var out []string
	for _, st := range prog.stmts {
		if st.call == nil {
			continue
		}
		for _, a := range st.call.args {
			if a.source {
				out = append(out, fmt.Sprintf("line %d: %s(%s=...): the expression %s is outside the helpers subset; passed as its source text",
					lineOf(text, a.at), st.call.name, a.key, clipText(text[a.at:a.end], 200)))
			}
		}
	}
	return out
}
