package core

// Running a helpers program (ADR 0016). A turn that interprets a program
// records where the program is (Turn.Program) and the calls it made with
// their results (Turn.Calls, Turn.Results). Whenever every call made so far
// has answered, the program runs again from its start: the statements
// before a made call take that call's recorded result, and the run goes on
// to the calls that come next. All the calls it reaches before a statement
// that needs one of their results are requested together, in order; the
// shell runs them as any turn's calls (step.go: nextBatch). Nothing but the
// results is ever stored, so a turn checkpointed between two calls resumes,
// replays and forks exactly.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// progStop is a statement that could not be computed: the block ends there.
type progStop struct {
	line int
	stmt string
	msg  string
}

// progRun is how far a program goes with the results it has: the calls to
// make next, or, when there are none, the statement it stopped at (nil at
// the end of the program).
type progRun struct {
	calls []ToolCall
	stop  *progStop
}

// callID is the id of a program's n-th call statement (1-based): the id a
// block of literal calls gives its n-th call.
func callID(step, n int) string { return fmt.Sprintf("call_%d_%d", step, n) }

// runProgram runs prog (parsed from text) from its start. made and results
// are the calls the program made so far and their results (aligned; an
// empty CallID means not answered yet).
func runProgram(cfg Config, text string, prog *helperProgram, step int, made []ToolCall, results []ToolResult) progRun {
	env := map[string]hval{}
	var out []ToolCall
	k := 0
	stopAt := func(st helperStmt, err error) progRun {
		if err == errAwaitsResult || len(out) > 0 {
			// The calls before it run first; the statement is computed
			// again once their results are in.
			return progRun{calls: out}
		}
		return progRun{stop: &progStop{line: lineOf(text, st.off), stmt: text[st.off:st.end], msg: err.Error()}}
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
			c, r := made[k-1], results[k-1]
			bind(env, st.target, &callResult{id: c.ID, tool: c.Name, text: r.Output, err: r.Error, pending: r.CallID == ""})
			continue
		}
		args, err := callArgs(st.call, env)
		if err != nil {
			return stopAt(st, err)
		}
		tc, err := ValidateCall(cfg, NativeCall{ID: callID(step, k), Name: st.call.name, Arguments: args})
		if err != nil {
			return stopAt(st, err)
		}
		tc.Raw = text[st.off:st.end]
		out = append(out, tc)
		bind(env, st.target, &callResult{id: tc.ID, tool: tc.Name, pending: true})
	}
	return progRun{calls: out}
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

// checkProgram finds, before anything runs, the errors that do not depend
// on a result: a value that cannot be computed, a call its tool's schema
// refuses, an unknown tool. Values that need a result are left to the run.
func checkProgram(cfg Config, text string, prog *helperProgram, step int) []string {
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
			id := callID(step, k)
			var args string
			args, err = callArgs(st.call, env)
			bind(env, st.target, &callResult{id: id, tool: st.call.name, pending: true})
			if err == errAwaitsResult {
				args = "{}" // checked when it runs; only the tool's name now
				if _, known := cfg.tool(st.call.name); known {
					continue
				}
				err = nil
			}
			if err == nil {
				if _, verr := ValidateCall(cfg, NativeCall{ID: id, Name: st.call.name, Arguments: args}); verr != nil {
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

// startProgram begins the turn of a reply whose blocks form a program:
// checked, then run to its first calls. msg is the reply's assistant
// message, the last of st.Messages.
func startProgram(cfg Config, st State, msg Message, prog *helperProgram) State {
	step := st.Counters.Steps
	if n := cfg.maxCallsPerTurn(); prog.calls > n {
		return correct(cfg, st, msg, []string{fmt.Sprintf("you made %d tool calls in one reply; at most %d are allowed per turn", prog.calls, n)})
	}
	if errs := checkProgram(cfg, msg.Content, prog, step); len(errs) > 0 {
		return correct(cfg, st, msg, errs)
	}
	st.Counters.Corrections = 0
	st.Phase = PhaseTools
	st.Turn = &Turn{Calls: []ToolCall{}, Results: []ToolResult{}, Program: &Program{Message: len(st.Messages) - 1, Step: step}}
	return advanceProgram(cfg, st, runProgram(cfg, msg.Content, prog, step, nil, nil))
}

// resumeProgram goes on with the program of st's turn once every call it
// made has answered. A turn whose program is not where it says is a bad
// state; a program the agent's tools no longer read (its agent changed)
// stops there, and the model is told.
func resumeProgram(cfg Config, st State) (State, error) {
	turn := st.Turn
	text, prog, err := programOf(cfg, st)
	switch {
	case errors.Is(err, ErrBadState):
		return st, err
	case err != nil:
		stop := &progStop{line: 1, stmt: "<helpers>", msg: "the block can no longer be read with the agent's tools: " + err.Error()}
		return advanceProgram(cfg, st, progRun{stop: stop}), nil
	}
	return advanceProgram(cfg, st, runProgram(cfg, text, prog, turn.Program.Step, turn.Calls, turn.Results)), nil
}

// advanceProgram goes on with the program of st's turn, every call of which
// has answered, as far as run got: it adds the calls that come next to the
// turn, or ends the turn (at the end of the program, at a statement that
// stopped it, or because stop-on-error stopped the turn).
func advanceProgram(cfg Config, st State, run progRun) State {
	turn := st.Turn
	if turn.Stopped {
		trailer := ""
		if len(run.calls) > 0 || run.stop != nil {
			trailer = renderProgramNote(cfg.format(), "The block stopped at the call that failed (this agent stops a turn at the first error): the statements after it did not run.")
		}
		return finishTurnWith(cfg, st, trailer)
	}
	if len(run.calls) == 0 {
		trailer := ""
		if s := run.stop; s != nil {
			trailer = renderProgramNote(cfg.format(), fmt.Sprintf("Error at line %d: %s\n%s\nThe block stopped there: this statement and the ones after it did not run.", s.line, s.stmt, s.msg))
		}
		return finishTurnWith(cfg, st, trailer)
	}
	st, ok := admitCalls(cfg, st, run.calls)
	if !ok {
		return st
	}
	st = acceptCalls(cfg, st, run.calls)
	next := *turn
	next.Calls = append(slices.Clip(turn.Calls), run.calls...)
	next.Results = append(slices.Clip(turn.Results), make([]ToolResult, len(run.calls))...)
	st.Turn = &next
	return st
}

// programOf reads the program of st's turn again from its message.
func programOf(cfg Config, st State) (string, *helperProgram, error) {
	i := st.Turn.Program.Message
	if i >= len(st.Messages) || st.Messages[i].Role != RoleAssistant {
		return "", nil, fmt.Errorf("%w: the turn's program is not in an assistant message (message %d of %d)", ErrBadState, i, len(st.Messages))
	}
	text := st.Messages[i].Content
	parsed, err := parseHelpers(text, cfg.tools())
	if err != nil {
		return "", nil, err
	}
	if parsed.program == nil {
		return "", nil, fmt.Errorf("%w: the turn's message holds no program", ErrBadState)
	}
	return text, parsed.program, nil
}

// renderProgramNote is a note after a program's results, in the style of
// format f.
func renderProgramNote(f Format, text string) string {
	if f == FormatHelpers {
		return "<helpers_error>\n" + text + "\n</helpers_error>"
	}
	return text
}

// lineOf is the 1-based line of offset off in text.
func lineOf(text string, off int) int {
	return strings.Count(text[:min(off, len(text))], "\n") + 1
}
