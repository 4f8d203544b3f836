package core

// Running a helpers program (ADR 0016): the core's side. A turn that
// interprets a program records where the program is (Turn.Program) and the
// calls it made with their results (Turn.Calls, Turn.Results); package
// helpers runs the program over them (helpers.Program.Run), asking the
// agent (programHost) to check each call. The calls it returns are
// requested together, in order; the shell runs them as any turn's calls
// (step.go: nextBatch). Nothing but the results is ever stored, so a turn
// checkpointed between two calls resumes, replays and forks exactly.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stepwise-agent/stepwise/core/helpers"
)

// progStop is a statement that could not be computed: the block ends there.
type progStop = helpers.Stop

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

// programHost is the agent a program of step runs for: its calls are
// checked with ValidateCall and get the ids of step.
type programHost struct {
	cfg  Config
	step int
}

// IsTool reports whether name is one of the agent's tools.
func (h programHost) IsTool(name string) bool {
	_, ok := h.cfg.tool(name)
	return ok
}

// Call validates the program's n-th call (ValidateCall) under the id
// the n-th call of a block of literal calls would get.
func (h programHost) Call(n int, name, args string) (helpers.ToolCall, error) {
	tc, err := ValidateCall(h.cfg, NativeCall{ID: callID(h.step, n), Name: name, Arguments: args})
	if err != nil {
		return helpers.ToolCall{}, err
	}
	return helpers.ToolCall{ID: tc.ID, Name: tc.Name, Args: tc.Args, Raw: tc.Raw}, nil
}

// runProgram runs prog (parsed from text) from its start. made and results
// are the calls the program made so far and their results (aligned; an
// empty CallID means not answered yet).
func runProgram(cfg Config, text string, prog *helperProgram, step int, made []ToolCall, results []ToolResult) progRun {
	done := make([]helpers.Result, len(made))
	for i, c := range made {
		var r ToolResult // a result not recorded is one not in yet
		if i < len(results) {
			r = results[i]
		}
		done[i] = helpers.Result{ID: c.ID, Tool: c.Name, Output: r.Output, Error: r.Error, Pending: r.CallID == ""}
	}
	run := prog.Run(text, programHost{cfg, step}, done)
	out := progRun{stop: run.Stop}
	if run.Calls != nil {
		out.calls = make([]ToolCall, len(run.Calls))
		for i, c := range run.Calls {
			out.calls[i] = ToolCall{ID: c.ID, Name: c.Name, Args: c.Args, Raw: c.Raw}
		}
	}
	return out
}

// checkProgram finds, before anything runs, the errors that do not depend
// on a result: a value that cannot be computed, a call its tool's schema
// refuses, an unknown tool. Values that need a result are left to the run.
func checkProgram(cfg Config, text string, prog *helperProgram, step int) []string {
	return prog.Check(text, programHost{cfg, step})
}

// startProgram begins the turn of a reply whose blocks form a program
// (parsed.program): checked, then run to its first calls, the turn
// recording the parser's warnings (programMeta). msg is the reply's
// assistant message, the last of st.Messages.
func startProgram(cfg Config, st State, msg Message, parsed Parsed) State {
	prog := parsed.program
	step := st.Counters.Steps
	if n := cfg.maxCallsPerTurn(); prog.Calls() > n {
		return correct(cfg, st, msg, []string{fmt.Sprintf("you made %d tool calls in one reply; at most %d are allowed per turn", prog.Calls(), n)})
	}
	if errs := checkProgram(cfg, msg.Content, prog, step); len(errs) > 0 {
		return correct(cfg, st, msg, errs)
	}
	st.Counters.Corrections = 0
	st.Phase = PhaseTools
	st.Turn = &Turn{Calls: []ToolCall{}, Results: []ToolResult{}, Program: &Program{Message: len(st.Messages) - 1, Step: step}, Parse: programMeta(parsed)}
	return advanceProgram(cfg, st, runProgram(cfg, msg.Content, prog, step, nil, nil))
}

// programMeta is what the turn of a program records of its parse: the
// parser's warnings (nil when none). A program's calls are not spans of
// the reply, and the format auto chose is left out as it always was, so
// that a program's turn without warnings keeps its bytes.
func programMeta(parsed Parsed) *ParseMeta {
	if len(parsed.Meta.Warnings) == 0 {
		return nil
	}
	return &ParseMeta{Warnings: parsed.Meta.Warnings}
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
		stop := &progStop{Line: 1, Stmt: "<helpers>", Msg: "the block can no longer be read with the agent's tools: " + err.Error()}
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
			trailer = renderProgramNote(cfg.format(), fmt.Sprintf("Error at line %d: %s\n%s\nThe block stopped there: this statement and the ones after it did not run.", s.Line, s.Stmt, s.Msg))
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
	parsed, err := parseHelpersWith(cfg.helpersOptions(), text, cfg.tools())
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
