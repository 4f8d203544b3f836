package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// The JSON the API speaks (documented in openapi.json).

type apiFailure struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

type apiParent struct {
	ID   string `json:"id"`
	Step int    `json:"step"`
}

type apiHolder struct {
	Owner string `json:"owner"`
	Host  string `json:"host,omitempty"`
	PID   int    `json:"pid,omitempty"`
	// Alive is whether the holder's process is alive, when this host can
	// tell; null otherwise.
	Alive   *bool  `json:"alive"`
	Expires string `json:"expires"`
	Live    bool   `json:"live"`
}

type apiCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Raw is the text the model wrote the call as; "" for a native call.
	Raw string `json:"raw"`
}

type apiInDoubt struct {
	apiCall
	Step    int    `json:"step"`
	Started string `json:"started"`
}

// apiCounters are a run's totals at a step. Steps is the step's seq (for a
// run, its last step's: its steps); Requests is the core's count of the
// requests made, what max_steps bounds (core.Counters.Steps; see "Steps"
// in core's doc).
type apiCounters struct {
	Steps       int `json:"steps"`
	Requests    int `json:"requests"`
	ModelCalls  int `json:"model_calls"`
	Corrections int `json:"corrections"`
	Escalations int `json:"escalations"`
}

type apiUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Cost is what the model calls cost at the agent's prices, a decimal
	// in the prices' currency (core.FormatCost); absent when the agent
	// sets no prices.
	Cost string `json:"cost,omitempty"`
}

// usageOf is the tokens and cost of counters c.
func usageOf(c core.Counters) apiUsage {
	u := apiUsage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens}
	if c.Cost > 0 {
		u.Cost = core.FormatCost(c.Cost)
	}
	return u
}

// apiRun is a run as GET /v1/runs/{id} shows it; the list shows the same
// without pending calls, counters and usage (they need its last state).
type apiRun struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// StoredStatus is the status as stored when it differs from Status (a
	// running run whose driver died is shown interrupted).
	StoredStatus string `json:"stored_status,omitempty"`
	Created      string `json:"created"`
	Updated      string `json:"updated"`
	Input        string `json:"input"`
	Answer       string `json:"answer,omitempty"`
	// Output is the answer as a JSON value, for an agent with an output
	// schema ([output]); GET /v1/runs/{id} only.
	Output  json.RawMessage `json:"output,omitempty"`
	Failure *apiFailure     `json:"failure,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	RetryAt string          `json:"retry_at,omitempty"`
	// StallAttempts is the run's stall count in a row (absent: it has not
	// stalled since it last made progress).
	StallAttempts int `json:"stall_attempts,omitempty"`
	// CancelRequested is the reason of a cancellation requested of the
	// run's driver and not yet acted on.
	CancelRequested string       `json:"cancel_requested,omitempty"`
	Parent          *apiParent   `json:"parent,omitempty"`
	Holder          *apiHolder   `json:"holder"`
	Steps           int          `json:"steps"`
	Pending         []apiCall    `json:"pending_tool_calls"`
	InDoubt         []apiInDoubt `json:"in_doubt_calls,omitempty"`
	Counters        *apiCounters `json:"counters,omitempty"`
	Usage           *apiUsage    `json:"usage,omitempty"`
	ToolsUsed       []string     `json:"tools_used,omitempty"`
	Sources         []string     `json:"sources,omitempty"`
	// Turns counts the user messages the run has taken: its input (or the
	// user messages of the history it started from) and each message sent
	// to it since, once folded in (store.RunInfo.Turns); a message still
	// waiting in the run's inbox is not counted yet.
	Turns int `json:"turns"`
	// Children are the child runs of the run's sub-agent calls, in the
	// order called (GET /v1/runs/{id}, for an agent with [[agents]]).
	Children []apiChild `json:"children,omitempty"`
}

// apiChild is a child run of a sub-agent call.
type apiChild struct {
	Step   int    `json:"step"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// shownStatus is the status a run is shown with: running with no live
// driver is interrupted.
func shownStatus(ri store.RunInfo, now time.Time) store.Status {
	if ri.Status == store.StatusRunning && !shell.Driven(ri.Lease, now) && ri.Lease.Owner != "" {
		return store.StatusInterrupted
	}
	return ri.Status
}

func runOf(ri store.RunInfo, now time.Time) apiRun {
	r := apiRun{ID: ri.ID, Agent: ri.Agent, Status: string(shownStatus(ri, now)), Created: stamp(ri.Created), Updated: stamp(ri.Updated),
		Input: ri.Input, Answer: ri.Answer, Reason: ri.Reason, StallAttempts: ri.StallAttempts, Steps: ri.LastSeq, Turns: ri.Turns, Pending: []apiCall{}}
	if r.Status != string(ri.Status) {
		r.StoredStatus = string(ri.Status)
	}
	if ri.FailCode != "" {
		r.Failure = &apiFailure{Code: string(ri.FailCode), Reason: ri.Reason}
	}
	if !ri.RetryAt.IsZero() {
		r.RetryAt = stamp(ri.RetryAt)
	}
	if !ri.Status.Ended() {
		r.CancelRequested = ri.CancelReason
	}
	if ri.ParentID != "" {
		r.Parent = &apiParent{ID: ri.ParentID, Step: ri.ParentStep}
	}
	if l := ri.Lease; l.Owner != "" {
		h := &apiHolder{Owner: l.Owner, Expires: stamp(l.Expires), Live: l.Live(now)}
		if p, ok := shell.ParseOwner(l.Owner); ok {
			h.Host, h.PID = p.Host, p.PID
		}
		if alive, known := shell.HolderAlive(l.Owner); known {
			h.Alive = &alive
		}
		r.Holder = h
	}
	return r
}

// withState adds what the run's last state tells: the calls it waits for,
// counters, usage, tools used and sources.
func (r *apiRun) withState(st core.State) {
	if p := st.Pending; p != nil && p.Kind == core.PendingExternal && st.Turn != nil {
		for _, id := range p.CallIDs {
			for _, c := range st.Turn.Calls {
				if c.ID == id {
					r.Pending = append(r.Pending, callOf(c))
				}
			}
		}
	}
	c := st.Counters
	r.Counters = &apiCounters{Steps: r.Steps, Requests: c.Steps, ModelCalls: c.ModelCalls, Corrections: c.Corrections, Escalations: c.Escalations}
	u := usageOf(c)
	r.Usage = &u
	r.ToolsUsed, r.Sources = st.ToolsUsed, st.Sources
	if st.Structured && st.Phase == core.PhaseDone {
		r.Output = json.RawMessage(st.Answer)
	}
}

func callOf(c core.ToolCall) apiCall {
	args := json.RawMessage(c.Args)
	if !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	return apiCall{ID: c.ID, Name: c.Name, Arguments: args, Raw: c.Raw}
}

// runList is a page of GET /v1/runs.
type runList struct {
	Runs []apiRun `json:"runs"`
	// Next is the cursor of the next page; none on the last.
	Next string `json:"next_cursor,omitempty"`
}

// replayReport is what POST /v1/runs/{id}/replay answers.
type replayReport struct {
	RunID      string         `json:"run_id"`
	Steps      int            `json:"steps"`
	Identical  bool           `json:"identical"`
	Divergence *apiDivergence `json:"divergence,omitempty"`
}

// apiDivergence is the first step whose action the replay decided
// differently: both actions as the core renders them, and what differs
// when they render alike.
type apiDivergence struct {
	Step     int    `json:"step"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Detail   string `json:"detail,omitempty"`
}

// apiStep is one step, as /steps lists it and the event stream sends it
// (the event's id is Seq): the result it folded in, which answers the
// request of the step before it, and its own action (see "Steps" in core's
// doc).
type apiStep struct {
	Seq     int    `json:"seq"`
	Created string `json:"created"`
	// Status is the run's status this step leads to.
	Status string     `json:"status"`
	Action *apiAction `json:"action,omitempty"`
	Result *apiResult `json:"result,omitempty"`
	// Messages are the messages this step appended to the conversation.
	Messages []core.Message `json:"messages"`
	Counters apiCounters    `json:"counters"`
	Usage    apiUsage       `json:"usage"`
	// Turn is the user turn the run is in after this step, from 1 (a run
	// started from a history begins at its number of user messages): a
	// user message begins a turn when the run takes it into the
	// conversation, which for a message sent while the run worked is at
	// its next model call (core.State.UserTurns; stepwise show groups
	// steps by it).
	Turn int `json:"turn"`
}

// apiAction is a step's decision: its kind ("model", "tools", "external",
// "complete", "fail", "memory_search", "memory_create",
// "memory_traverse"), the core's one-line description, and the details
// of its kind.
type apiAction struct {
	Kind     string    `json:"kind"`
	Describe string    `json:"describe"`
	Role     string    `json:"role,omitempty"`
	Calls    []apiCall `json:"calls,omitempty"`
	Answer   string    `json:"answer,omitempty"`
	Code     string    `json:"code,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// apiResult is the result a step folded in: what the previous step's
// request got (a model reply, tool results, or memory hits); Data is the
// result itself.
type apiResult struct {
	Kind     string `json:"kind"`
	Describe string `json:"describe"`
	Data     any    `json:"data"`
}

func stepOf(rec store.StepRecord, prevMessages int) apiStep {
	st := rec.State
	s := apiStep{Seq: rec.Seq, Created: stamp(rec.Created), Status: string(store.StatusRunning), Messages: []core.Message{}, Turn: st.UserTurns(),
		Counters: apiCounters{Steps: rec.Seq, Requests: st.Counters.Steps, ModelCalls: st.Counters.ModelCalls, Corrections: st.Counters.Corrections, Escalations: st.Counters.Escalations},
		Usage:    usageOf(st.Counters)}
	if prevMessages < len(st.Messages) {
		s.Messages = st.Messages[prevMessages:]
	}
	if rec.Action != nil {
		s.Status = string(store.StatusOf(rec.Action))
		a := &apiAction{Kind: core.ActionKind(rec.Action), Describe: core.DescribeAction(rec.Action)}
		switch x := rec.Action.(type) {
		case core.RequestModelCall:
			a.Role = string(x.Role)
		case core.RequestToolCalls:
			for _, c := range x.Calls {
				a.Calls = append(a.Calls, callOf(c))
			}
		case core.RequestExternalToolCalls:
			for _, c := range x.Calls {
				a.Calls = append(a.Calls, callOf(c))
			}
		case core.Complete:
			a.Answer = x.Answer
		case core.Fail:
			a.Code, a.Reason = string(x.Code), x.Reason
		}
		s.Action = a
	}
	if rec.Result != nil {
		s.Result = &apiResult{Kind: core.ResultKind(rec.Result), Describe: core.DescribeResult(rec.Result), Data: rec.Result}
	}
	return s
}

// cursor encodes a listing position opaquely.
func encodeCursor(c *store.Cursor) string {
	if c == nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Created.UnixNano(), 10) + "/" + c.ID))
}

func decodeCursor(s string) (*store.Cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		if ns, id, ok := strings.Cut(string(b), "/"); ok {
			if n, err := strconv.ParseInt(ns, 10, 64); err == nil && id != "" {
				return &store.Cursor{Created: time.Unix(0, n).UTC(), ID: id}, nil
			}
		}
	}
	return nil, fmt.Errorf("cursor %q is not one this server gave", s)
}
