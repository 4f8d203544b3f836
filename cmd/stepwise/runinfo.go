package main

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// shownStatus is the status a run is shown with: a run marked running whose
// driver died (its process is gone, or its lease expired) is interrupted,
// not running, with a note saying so.
func shownStatus(ri store.RunInfo, now time.Time) (store.Status, string) {
	if ri.Status != store.StatusRunning || shell.Driven(ri.Lease, now) {
		return ri.Status, ""
	}
	if ri.Lease.Owner == "" {
		return store.StatusInterrupted, "no process drives it"
	}
	return store.StatusInterrupted, "its driver, " + shell.DescribeLease(ri.Lease, now) + ", stopped driving it"
}

// jsonHolder is who holds a run's lease.
type jsonHolder struct {
	Owner string `json:"owner"`
	Host  string `json:"host,omitempty"`
	PID   int    `json:"pid,omitempty"`
	// Alive is whether the holder's process is alive, when this host can
	// tell (null otherwise).
	Alive   *bool  `json:"alive"`
	Expires string `json:"expires"`
	// Live is whether the lease has not expired.
	Live bool `json:"live"`
}

func holderJSON(l store.Lease, now time.Time) *jsonHolder {
	if l.Owner == "" {
		return nil
	}
	h := &jsonHolder{Owner: l.Owner, Expires: l.Expires.UTC().Format(time.RFC3339Nano), Live: l.Live(now)}
	if p, ok := shell.ParseOwner(l.Owner); ok {
		h.Host, h.PID = p.Host, p.PID
	}
	if alive, known := shell.HolderAlive(l.Owner); known {
		h.Alive = &alive
	}
	return h
}

// jsonRun is a run in ls --json and show --json. Its steps is the run's
// number of steps, its last step's seq, as the HTTP API's (see "Steps" in
// core's doc).
type jsonRun struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// StoredStatus is the status as stored, when it differs from Status
	// (a running run whose driver died is shown interrupted).
	StoredStatus string `json:"stored_status,omitempty"`
	Note         string `json:"note,omitempty"`
	Steps        int    `json:"steps"`
	// Turns counts the user messages the run has taken (its input is the
	// first; see ADR 0032).
	Turns   int          `json:"turns"`
	Created string       `json:"created"`
	Updated string       `json:"updated"`
	Input   string       `json:"input,omitempty"`
	Answer  string       `json:"answer,omitempty"`
	Failure *jsonFailure `json:"failure,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	RetryAt string       `json:"retry_at,omitempty"`
	// StallAttempts is the run's stall count in a row (0: it has not
	// stalled since it last made progress).
	StallAttempts int         `json:"stall_attempts,omitempty"`
	ParentID      string      `json:"parent_id,omitempty"`
	ParentStep    int         `json:"parent_step,omitempty"`
	Holder        *jsonHolder `json:"holder"`
	// TakeOvers are the operators' forced take-overs of the run's lease
	// (resume/cancel --take-over), one line each.
	TakeOvers []string `json:"take_overs,omitempty"`
	// Pending is the calls the run is paused for: [] unless its status is
	// awaiting_tool_results, never null.
	Pending []jsonCall `json:"pending_tool_calls"`
}

// jsonStatusHelp documents the status vocabulary and pending_tool_calls of
// every --json output (run, resume, fork, show, ls), for their help texts.
const jsonStatusHelp = `With --json, "status" is one of: running, awaiting_tool_results, interrupted,
stalled, completed, failed, cancelled (the same names in run, resume, fork, show
and ls). "pending_tool_calls" is always an array, never null or absent: the calls a
run awaiting_tool_results is paused for, each with id, name, arguments and raw (the
text the model wrote the call as; "" for a native call), and [] otherwise.`

// pendingJSON is the calls a run in state st is paused for, [] when none.
func pendingJSON(st core.State) []jsonCall {
	out := []jsonCall{}
	if st.Pending == nil || st.Pending.Kind != core.PendingExternal {
		return out
	}
	for _, c := range st.PendingCalls() {
		out = append(out, callJSON(c))
	}
	return out
}

// pendingTreeJSON is pendingJSON of a run that may wait on sub-agents:
// their calls, namespaced (shell.PendingCalls).
func pendingTreeJSON(ctx context.Context, st shell.StepLoader, runID string, state core.State) []jsonCall {
	out := pendingJSON(state)
	if len(out) > 0 {
		return out
	}
	calls, _ := shell.PendingCalls(ctx, st, runID, state)
	for _, c := range calls {
		out = append(out, callJSON(c))
	}
	return out
}

func runJSON(ri store.RunInfo, now time.Time, withInput bool) jsonRun {
	status, note := shownStatus(ri, now)
	j := jsonRun{ID: ri.ID, Agent: ri.Agent, Status: string(status), Note: note, Steps: ri.LastSeq, Turns: ri.Turns,
		Created: ri.Created.UTC().Format(time.RFC3339Nano), Updated: ri.Updated.UTC().Format(time.RFC3339Nano),
		Answer: ri.Answer, Reason: ri.Reason, StallAttempts: ri.StallAttempts, ParentID: ri.ParentID, ParentStep: ri.ParentStep, Holder: holderJSON(ri.Lease, now), Pending: []jsonCall{}}
	if status != ri.Status {
		j.StoredStatus = string(ri.Status)
	}
	if withInput {
		j.Input = ri.Input
	}
	if ri.FailCode != "" {
		j.Failure = &jsonFailure{Code: string(ri.FailCode), Reason: ri.Reason}
	}
	if !ri.RetryAt.IsZero() {
		j.RetryAt = ri.RetryAt.UTC().Format(time.RFC3339)
	}
	j.TakeOvers = ri.TakeOvers
	return j
}

// stallNote describes a stalled run's retry for people: "stall 3 in a
// row; next try in 40s (at 2026-11-27 01:02:03)", "" for other runs.
func stallNote(ri store.RunInfo, now time.Time) string {
	if ri.Status != store.StatusStalled {
		return ""
	}
	note := "next try now"
	if ri.RetryAt.After(now) {
		note = fmt.Sprintf("next try in %s (at %s)", ri.RetryAt.Sub(now).Round(time.Second), ri.RetryAt.Local().Format(time.DateTime))
	}
	if ri.StallAttempts > 0 {
		note = fmt.Sprintf("stall %d in a row; %s", ri.StallAttempts, note)
	}
	return note
}
