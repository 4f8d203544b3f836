package helpers

// Running a program (ADR 0016). The host records where the program is and
// the calls it made with their results. Whenever every call made so far
// has answered, the program runs again from its start: the statements
// before a made call take that call's recorded result, and the run goes on
// to the calls that come next. All the calls it reaches before a statement
// that needs one of their results are returned together, in order. Nothing
// but the results is ever stored, so a run checkpointed between two calls
// resumes, replays and forks exactly.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// Host is the agent a program runs for; the core supplies it.
type Host interface {
	// IsTool reports whether name is one of the agent's tools.
	IsTool(name string) bool
	// Call checks the program's n-th call statement (1-based): the tool's
	// name and its arguments as a JSON object. It returns the call as it
	// will be made (its id, its canonical arguments), or why it is refused,
	// in words the model reads.
	Call(n int, name, args string) (ToolCall, error)
}

// ToolCall is a call a program makes: as Host.Call returned it, with Raw,
// the statement it was written in.
type ToolCall struct {
	ID, Name string
	Args     json.RawMessage
	Raw      string
}

// Result is what a call the program made so far came to: its output text
// (what the model reads) or the error of a failed call; Pending while the
// call has not answered.
type Result struct {
	ID, Tool      string
	Output, Error string
	Pending       bool
}

// Stop is a statement that could not be computed: the block ends there.
// Line is its 1-based line in the reply, Stmt its text, Msg why.
type Stop struct {
	Line int
	Stmt string
	Msg  string
}

// Run is how far a program goes with the results it has: the calls to make
// next, or, when there are none, the statement it stopped at (nil at the
// end of the program).
type Run struct {
	Calls []ToolCall
	Stop  *Stop
}

// Run runs prog (parsed from text) from its start. made are the results of
// the calls the program made so far, in order (Pending for those not
// answered).
func (prog *Program) Run(text string, host Host, made []Result) Run {
	env := map[string]hval{}
	var out []ToolCall
	k := 0
	stopAt := func(st helperStmt, err error) Run {
		if err == errAwaitsResult || len(out) > 0 {
			// The calls before it run first; the statement is computed
			// again once their results are in.
			return Run{Calls: out}
		}
		return Run{Stop: &Stop{Line: lineOf(text, st.off), Stmt: text[st.off:st.end], Msg: err.Error()}}
	}
	for _, st := range prog.stmts {
		if st.call == nil {
			v, err := evalHelper(st.expr, env)
			if err != nil {
				return stopAt(st, err)
			}
			env[st.target] = v
			continue
		}
		k++
		if k <= len(made) {
			r := made[k-1]
			bind(env, st.target, &callResult{id: r.ID, tool: r.Tool, text: r.Output, err: r.Error, pending: r.Pending})
			continue
		}
		args, err := callArgs(st.call, env)
		if err != nil {
			return stopAt(st, err)
		}
		tc, err := host.Call(k, st.call.name, args)
		if err != nil {
			return stopAt(st, err)
		}
		tc.Raw = text[st.off:st.end]
		out = append(out, tc)
		bind(env, st.target, &callResult{id: tc.ID, tool: tc.Name, pending: true})
	}
	return Run{Calls: out}
}

func bind(env map[string]hval, name string, r *callResult) {
	if name != "" {
		env[name] = hval{v: r, cost: len(r.text)}
	}
}

// callArgs computes a call's arguments as a JSON object.
func callArgs(c *helperCall, env map[string]hval) (string, error) {
	obj := make(map[string]any, len(c.args))
	cost := 2
	for _, a := range c.args {
		if !a.spread {
			v, err := plainValue(a.val, env)
			if err != nil {
				return "", err
			}
			if _, dup := obj[a.key]; dup { // only a ** before it can have given it
				return "", evalErr(a.val, "%s(...) got two values for the argument %q", c.name, a.key)
			}
			obj[a.key], cost = v.v, cost+v.cost+len(a.key)+2
			continue
		}
		v, err := evalHelper(a.val, env)
		if err != nil {
			return "", err
		}
		if r, ok := v.v.(*callResult); ok {
			if v, err = r.jsonOf(a.val); err != nil {
				return "", err
			}
		}
		members, ok := v.v.(map[string]any)
		if !ok {
			return "", evalErr(a.val, "** needs a dict, and %s is %s", describeHelperExpr(a.val), helperTypeName(v.v))
		}
		for _, k := range sortedKeys(members) {
			if _, dup := obj[k]; dup {
				return "", evalErr(a.val, "%s(...) got two values for the argument %q", c.name, k)
			}
			obj[k] = members[k]
		}
		cost += v.cost
	}
	if cost > maxHelperValue {
		return "", &evalError{off: c.off, msg: fmt.Sprintf("the arguments are larger than %d bytes", maxHelperValue)}
	}
	raw, err := schema.Canonical(obj)
	if err != nil {
		return "", &evalError{off: c.off, msg: err.Error()}
	}
	return string(raw), nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Check finds, before anything runs, the errors of prog (parsed from text)
// that do not depend on a result: a value that cannot be computed, a call
// the host refuses (its schema, an unknown tool). Values that need a result
// are left to the run. Each error names its line.
func (prog *Program) Check(text string, host Host) []string {
	var errs []string
	env := map[string]hval{}
	k := 0
	for _, st := range prog.stmts {
		var err error
		if st.call == nil {
			var v hval
			if v, err = evalHelper(st.expr, env); err == nil {
				env[st.target] = v
				continue
			}
			// Later statements that use it are not checked: the error
			// is about this one.
			bind(env, st.target, &callResult{pending: true})
		} else {
			k++
			var args string
			args, err = callArgs(st.call, env)
			bind(env, st.target, &callResult{tool: st.call.name, pending: true})
			if err == errAwaitsResult {
				args = "{}" // checked when it runs; only the tool's name now
				if host.IsTool(st.call.name) {
					continue
				}
				err = nil
			}
			if err == nil {
				if _, verr := host.Call(k, st.call.name, args); verr != nil {
					errs = append(errs, fmt.Sprintf("line %d: %v", lineOf(text, st.off), verr))
				}
				continue
			}
		}
		if err != errAwaitsResult {
			errs = append(errs, fmt.Sprintf("line %d (%s): %v", lineOf(text, st.off), clipText(text[st.off:st.end], 80), err))
		}
	}
	return errs
}

// lineOf is the 1-based line of offset off in text.
func lineOf(text string, off int) int {
	return strings.Count(text[:min(off, len(text))], "\n") + 1
}
