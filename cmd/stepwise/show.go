package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	c := &command{name: "show", args: "RUN_ID [--step N [--request]] [--json]", summary: "show a run as a timeline",
		help: `Shows the run as a readable timeline: each step with the result it folded in (the
answer to the request of the step before it, marked <-), then its action, rendered by
the core, with the time and tokens performing it took. A run's steps are numbered by
seq from 0 (the start), and its number of steps is its last seq, as in ls and the HTTP
API; the requests= of a state counts its requests, what max_steps bounds. Also who
drives the run (and whether that process is alive), the calls in doubt (non-idempotent
calls that were in flight when the run stopped), the agent changes, and for a stalled
run why it stalled, how many times in a row, and when it is tried next. --step N shows
one step in full: the result, the action, the state and the conversation. --json
prints the same as one JSON object; each of its "steps" has seq, result (the result it
folded in, as show --step N and the HTTP API's /steps give it), action, and
duration_ms and tokens (what performing its action cost); "outcome", deprecated, is
the next step's result.

--step N --request prints the request the model received at step N, for every
provider: the step's model call (its role, messages and tools, numbered as the run
numbered its model calls) rendered by the provider of its role in the agent the run
followed at that step, through the code that sends it, with the agent's model
settings (model, temperature, max_tokens, streaming, reasoning and thinking options,
attachments, the provider's kept reasoning or thinking). Nothing is sent: no model
is contacted, no MCP server started, no API key read. It prints the method and URL
line, the headers (sorted; a credential header shows its variable's marker, as in
"Authorization: Bearer [redacted:OPENAI_API_KEY]"), a blank line, then the body as
is: the bytes the provider sent, not pretty-printed (pipe it to jq for that). The
script provider makes no HTTP request: its line names it, and its body is the JSON
object {"provider","call","reply","messages","tools"}: what it was given, and which
of its replies answered. With
--json it prints one object {step, role, call, provider, method, url, headers, body}
with the body as a JSON value (the HTTP API's GET /v1/runs/{id}/steps/{seq}/request
answers the same). A step whose action is not a model call exits 2, saying what the
step did.

` + jsonStatusHelp}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		step := fs.Int("step", -1, "show this step in full")
		asJSON := fs.Bool("json", false, "print one JSON object")
		request := fs.Bool("request", false, "with --step N: print the request the model received at step N")
		pos, code := e.parse(c, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		if *request && *step < 0 {
			fmt.Fprintf(e.stderr, "stepwise %s: --request needs --step N: the step whose model call to show\n", c.name)
			return exitUsage
		}
		ctx, st, done, code := e.readSession(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		info, err := st.Run(ctx, pos[0])
		if err != nil {
			return e.storeErr(c.name, err)
		}
		if *request {
			return showRequest(ctx, e, st, pos[0], *step, *asJSON)
		}
		if *step >= 0 {
			rec, err := st.LoadStep(ctx, pos[0], *step)
			if err != nil {
				return e.storeErr(c.name, err)
			}
			if *asJSON {
				return e.writeJSON(stepJSON(rec))
			}
			showStep(e, rec)
			return 0
		}
		tl, err := timeline(ctx, st, pos[0])
		if err != nil {
			return e.storeErr(c.name, err)
		}
		doubt := inDoubtOf(ctx, st, info)
		changes, err := st.AgentChanges(ctx, pos[0])
		if err != nil {
			return e.storeErr(c.name, err)
		}
		now := time.Now()
		if *asJSON {
			out := showJSON{Run: runJSON(info, now, true), Steps: tl.steps, InDoubt: inDoubtJSON(doubt), AgentChanges: []jsonChange{},
				Tokens: jsonTokens{Prompt: tl.last.Counters.PromptTokens, Completion: tl.last.Counters.CompletionTokens}}
			for _, ch := range changes {
				out.AgentChanges = append(out.AgentChanges, jsonChange{AfterStep: ch.Seq, Created: ch.Created.UTC().Format(time.RFC3339Nano)})
			}
			if out.InDoubt == nil {
				out.InDoubt = []jsonInDoubt{}
			}
			if info.Status == store.StatusAwaitingToolResults {
				out.Run.Pending = pendingTreeJSON(ctx, st, info.ID, tl.last)
			}
			return e.writeJSON(out)
		}
		status, note := shownStatus(info, now)
		fmt.Fprintf(e.stdout, "run %s  agent %s  status %s  created %s\n", info.ID, info.Agent, status, info.Created.Local().Format(time.RFC3339))
		if note != "" {
			fmt.Fprintf(e.stdout, "(stored as %s: %s)\n", info.Status, note)
		}
		if d := shell.DescribeLease(info.Lease, now); d != "" && shell.Driven(info.Lease, now) {
			fmt.Fprintf(e.stdout, "driven by %s\n", d)
		}
		if info.ParentID != "" {
			fmt.Fprintf(e.stdout, "forked from %s at step %d\n", info.ParentID, info.ParentStep)
		}
		for _, ch := range changes {
			fmt.Fprintf(e.stdout, "agent changed after step %d (%s)\n", ch.Seq, ch.Created.Local().Format(time.DateTime))
		}
		for _, to := range info.TakeOvers {
			fmt.Fprintf(e.stdout, "taken over: %s\n", to)
		}
		fmt.Fprintf(e.stdout, "input: %s\n", oneLine(info.Input))
		if children, err := shell.Children(ctx, st, info.ID); err == nil && len(children) > 0 {
			// The tree: each sub-agent call's child run (show or replay it
			// on its own, or replay the root with --deep).
			fmt.Fprintln(e.stdout, "sub-agent runs:")
			for _, ch := range children {
				fmt.Fprintf(e.stdout, "  step %d call %s %s -> %s (%s, %s, %s)\n", ch.Step, ch.CallID, ch.Tool, ch.Info.ID, ch.Info.Agent, ch.Info.Status, plural(ch.Info.LastSeq, "step"))
			}
		}
		fmt.Fprintln(e.stdout)
		for i, s := range tl.steps {
			if tl.turn > 1 && (i == 0 || s.Turn != tl.steps[i-1].Turn) {
				// A conversation: its steps grouped by user turn.
				fmt.Fprintf(e.stdout, "── turn %d\n", s.Turn)
			}
			showBrief(e, s, tl.ended)
		}
		fmt.Fprintf(e.stdout, "\n%s  %s  tokens %d+%d\n", plural(tl.lastSeq(), "step"), core.DescribeState(tl.last), tl.last.Counters.PromptTokens, tl.last.Counters.CompletionTokens)
		for _, d := range doubt {
			fmt.Fprintf(e.stdout, "in doubt: %s %s %s (step %d, started %s): it may or may not have run; answer it with stepwise resume %s --results FILE\n",
				d.Call.ID, d.Call.Name, d.Call.Args, d.Step, d.Started.Local().Format(time.DateTime), info.ID)
		}
		switch info.Status {
		case store.StatusCompleted:
			fmt.Fprintf(e.stdout, "answer: %s\n", info.Answer)
		case store.StatusFailed, store.StatusCancelled:
			fmt.Fprintf(e.stdout, "%s (%s): %s\n", info.Status, info.FailCode, info.Reason)
		case store.StatusStalled:
			fmt.Fprintf(e.stdout, "%s (%s): %s\n", info.Status, stallNote(info, now), info.Reason)
		case store.StatusInterrupted:
			fmt.Fprintf(e.stdout, "%s: %s\n", info.Status, info.Reason)
		}
		return 0
	}
	register(c)
}

// showJSON is the shape of show --json.
type showJSON struct {
	Run          jsonRun         `json:"run"`
	Steps        []jsonStepBrief `json:"steps"`
	InDoubt      []jsonInDoubt   `json:"in_doubt_calls"`
	AgentChanges []jsonChange    `json:"agent_changes"`
	Tokens       jsonTokens      `json:"tokens"`
}

type jsonChange struct {
	AfterStep int    `json:"after_step"`
	Created   string `json:"created"`
}

type jsonTokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

// jsonStepBrief is one step of the timeline (see "Steps" in core's doc):
// the result it folded in (the answer to the previous step's request, as
// show --step N and GET /v1/runs/{id}/steps give it), its action, and what
// performing that action cost: the time from its checkpoint to the next
// step's and the tokens of the reply it got.
type jsonStepBrief struct {
	Seq int `json:"seq"`
	// Turn is the user turn the step belongs to: 1 from the start, and
	// one more at each step whose result is a user message (ADR 0032).
	Turn       int         `json:"turn"`
	Created    string      `json:"created"`
	Result     string      `json:"result,omitempty"`
	Action     string      `json:"action,omitempty"`
	State      string      `json:"state,omitempty"`
	DurationMS *float64    `json:"duration_ms,omitempty"`
	Tokens     *jsonTokens `json:"tokens,omitempty"`
	// Outcome is the result this step's action got, which belongs to the
	// next step (its "result"). Deprecated: read the next step's result;
	// kept for a release for the programs that read it.
	Outcome string `json:"outcome,omitempty"`
}

type timelineOf struct {
	steps []jsonStepBrief
	last  core.State
	ended bool
	turn  int
}

func isUserMessage(r core.Result) bool {
	_, ok := r.(core.UserMessage)
	return ok
}

// lastSeq is the seq of the timeline's last step: the run's number of steps.
func (tl timelineOf) lastSeq() int {
	if len(tl.steps) == 0 {
		return 0
	}
	return tl.steps[len(tl.steps)-1].Seq
}

// showBrief prints one step of the timeline: the result it folded in, then
// its action with what performing it cost: the time (pending while it has
// not come back on a run that has not ended) and the reply's tokens.
func showBrief(e *env, s jsonStepBrief, ended bool) {
	if s.Seq == 0 {
		fmt.Fprintf(e.stdout, "%4d  start %s\n", s.Seq, s.State)
		return
	}
	pad := fmt.Sprintf("%4d  ", s.Seq)
	if s.Result != "" {
		fmt.Fprintf(e.stdout, "%s<- %s\n", pad, s.Result)
		pad = "      "
	}
	if s.Action == "" {
		return
	}
	var notes []string
	if s.DurationMS != nil {
		notes = append(notes, (time.Duration(*s.DurationMS * float64(time.Millisecond))).Round(time.Millisecond).String())
	} else if !ended {
		notes = append(notes, "pending")
	}
	if s.Tokens != nil {
		notes = append(notes, fmt.Sprintf("%d+%d tokens", s.Tokens.Prompt, s.Tokens.Completion))
	}
	line := pad + s.Action
	if len(notes) > 0 {
		line += "  (" + strings.Join(notes, ", ") + ")"
	}
	fmt.Fprintln(e.stdout, line)
}

// timeline renders the run's steps, each with the result it folded in, and
// each action with the duration, tokens and outcome of performing it.
func timeline(ctx context.Context, st store.Store, runID string) (timelineOf, error) {
	var tl timelineOf
	var prev time.Time
	err := st.Steps(ctx, runID, func(rec store.StepRecord) error {
		s := jsonStepBrief{Seq: rec.Seq, Created: rec.Created.UTC().Format(time.RFC3339Nano)}
		if rec.Result != nil {
			s.Result = core.DescribeResult(rec.Result)
		}
		switch {
		case rec.Seq == 0:
			tl.turn = rec.State.UserTurns()
		case isUserMessage(rec.Result):
			tl.turn++
		}
		s.Turn = tl.turn
		if n := len(tl.steps); n > 0 {
			p := &tl.steps[n-1]
			ms := float64(rec.Created.Sub(prev)) / float64(time.Millisecond)
			p.DurationMS = &ms
			p.Outcome = s.Result
			if r, ok := rec.Result.(core.ModelReply); ok && r.Usage.PromptTokens+r.Usage.CompletionTokens > 0 {
				p.Tokens = &jsonTokens{Prompt: r.Usage.PromptTokens, Completion: r.Usage.CompletionTokens}
			}
		}
		if rec.Seq == 0 {
			s.State = core.DescribeState(rec.State)
		} else if rec.Action != nil {
			s.Action = core.DescribeAction(rec.Action)
		}
		tl.steps = append(tl.steps, s)
		prev, tl.last = rec.Created, rec.State
		return nil
	})
	tl.ended = tl.last.Done()
	return tl, err
}

// inDoubtOf lists the run's in-doubt calls, judging idempotency by the
// run's recorded agent (none when it cannot be read).
func inDoubtOf(ctx context.Context, st store.Store, info store.RunInfo) []shell.InDoubtCall {
	if info.Status.Ended() {
		return nil
	}
	spec, _, err := agent.FromSource(info.Config)
	if err != nil {
		return nil
	}
	list, err := shell.NewRunner(st, nil).InDoubt(ctx, &shell.Agent{Config: spec.Config}, info.ID)
	if err != nil {
		return nil
	}
	return list
}

type jsonStepFull struct {
	Seq      int           `json:"seq"`
	Created  string        `json:"created"`
	Result   string        `json:"result,omitempty"`
	Action   string        `json:"action,omitempty"`
	State    string        `json:"state"`
	Messages []jsonMessage `json:"messages"`
}

type jsonMessage struct {
	Role    string     `json:"role"`
	Content string     `json:"content"`
	CallID  string     `json:"call_id,omitempty"`
	Name    string     `json:"name,omitempty"`
	IsError bool       `json:"is_error,omitempty"`
	Calls   []jsonCall `json:"calls,omitempty"`
}

func stepJSON(rec store.StepRecord) jsonStepFull {
	j := jsonStepFull{Seq: rec.Seq, Created: rec.Created.UTC().Format(time.RFC3339Nano), State: core.DescribeState(rec.State), Messages: []jsonMessage{}}
	if rec.Result != nil {
		j.Result = core.DescribeResult(rec.Result)
	}
	if rec.Action != nil {
		j.Action = core.DescribeAction(rec.Action)
	}
	for _, m := range rec.State.Messages {
		jm := jsonMessage{Role: string(m.Role), Content: m.Content, CallID: m.CallID, Name: m.Name, IsError: m.IsError}
		for _, c := range m.Calls {
			jm.Calls = append(jm.Calls, callJSON(c))
		}
		j.Messages = append(j.Messages, jm)
	}
	return j
}

func (e *env) writeJSON(v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "stepwise: %v\n", err)
		return exitInternal
	}
	return 0
}

func showStep(e *env, rec store.StepRecord) {
	fmt.Fprintf(e.stdout, "step %d  at %s\n", rec.Seq, rec.Created.Local().Format(time.RFC3339Nano))
	if rec.Result != nil {
		fmt.Fprintf(e.stdout, "result: %s\n", core.DescribeResult(rec.Result))
	}
	if rec.Action != nil {
		fmt.Fprintf(e.stdout, "action: %s\n", core.DescribeAction(rec.Action))
	}
	fmt.Fprintf(e.stdout, "state:  %s\n\nconversation:\n", core.DescribeState(rec.State))
	for i, m := range rec.State.Messages {
		fmt.Fprintf(e.stdout, "[%d] %s", i, m.Role)
		if m.CallID != "" {
			fmt.Fprintf(e.stdout, " (%s %s)", m.Name, m.CallID)
		}
		if m.IsError {
			fmt.Fprint(e.stdout, " error")
		}
		fmt.Fprintf(e.stdout, "\n%s\n", indent(m.Content))
		for _, c := range m.Calls {
			fmt.Fprintf(e.stdout, "    -> call %s %s %s\n", c.ID, c.Name, c.Args)
		}
	}
}

func indent(s string) string {
	if s == "" {
		return "    (empty)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "…"
	}
	return s
}
