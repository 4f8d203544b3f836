package coretest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// CheckState returns an error when st breaks an invariant that every state
// reachable from Start must keep.
func CheckState(cfg core.Config, st core.State) error {
	b, err := core.EncodeState(st)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	back, err := core.DecodeState(b)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	b2, err := core.EncodeState(back)
	if err != nil || !bytes.Equal(b, b2) {
		return fmt.Errorf("CBOR round trip is not byte-identical")
	}
	maxSteps := cfg.Limits.MaxSteps
	if maxSteps == 0 {
		maxSteps = core.DefaultLimits().MaxSteps
	}
	base := 0
	if st.Conv != nil {
		base = st.Conv.Base.Steps
	}
	if st.Counters.Steps-base > maxSteps {
		return fmt.Errorf("steps %d in the turn over the limit %d", st.Counters.Steps-base, maxSteps)
	}
	if st.Done() && st.Pending != nil {
		return errors.New("an ended run has a pending request")
	}
	if st.Phase == core.PhaseFailed && st.Failure == nil {
		return errors.New("failed without a failure")
	}
	if st.Turn != nil {
		if dup := firstDuplicate(callIDs(st.Turn.Calls)); dup != "" {
			return fmt.Errorf("call id %q twice in one turn", dup)
		}
	}
	if st.Pending != nil {
		if dup := firstDuplicate(st.Pending.CallIDs); dup != "" {
			return fmt.Errorf("pending call id %q twice", dup)
		}
		for _, id := range st.Pending.CallIDs {
			if st.Turn == nil || !contains(callIDs(st.Turn.Calls), id) {
				return fmt.Errorf("pending call %q is not in the turn", id)
			}
		}
	}
	if dup := firstDuplicate(st.ToolsUsed); dup != "" {
		return fmt.Errorf("tool %q twice in tools_used", dup)
	}
	// Every tool message answers a native call made earlier in the log.
	asked := map[string]bool{}
	for i, m := range st.Messages {
		for _, c := range m.Calls {
			asked[c.ID] = true
		}
		if m.Role == core.RoleTool && !asked[m.CallID] {
			return fmt.Errorf("message %d answers call %q that was never made", i, m.CallID)
		}
	}
	return nil
}

// CheckRun drives a run of cfg on input to its end with generated results and
// checks, at every step: CheckState; Step is idempotent on a pending state;
// Resume refuses a mismatched result and leaves the state unchanged; the state
// survives encode/decode (crash and restore) and the run goes on identically;
// the run ends within its step limit. It returns the final state and the
// results it fed in, in order.
func CheckRun(t *rapid.T, cfg core.Config, input string) (core.State, []core.Result) {
	st, err := core.Start(cfg, core.Request{Input: input})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	maxSteps := cfg.Limits.MaxSteps
	if maxSteps == 0 {
		maxSteps = core.DefaultLimits().MaxSteps
	}
	var fed []core.Result
	for i := 0; ; i++ {
		if i > maxSteps+1 {
			t.Fatalf("run did not end within %d steps: %s", maxSteps, core.DescribeState(st))
		}
		a := stepChecked(t, cfg, st)
		next := a.Next()
		switch a.(type) {
		case core.Complete, core.Fail:
			if _, err := core.Resume(cfg, next, core.ModelReply{Text: "late"}); !errors.Is(err, core.ErrNothingPending) {
				t.Fatalf("Resume on an ended run: %v", err)
			}
			return next, fed
		}
		if bad := Mismatched(a).Draw(t, "mismatched"); bad != nil && rapid.IntRange(0, 3).Draw(t, "try-mismatch") == 0 {
			got, err := core.Resume(cfg, next, bad)
			if err == nil {
				t.Fatalf("Resume accepted %s for %s", core.DescribeResult(bad), core.DescribeAction(a))
			}
			if !sameState(got, next) {
				t.Fatalf("Resume changed the state while refusing %s", core.DescribeResult(bad))
			}
		}
		if rapid.Bool().Draw(t, "restore") {
			next = restore(t, next)
		}
		res := ResultFor(cfg, a).Draw(t, "result")
		fed = append(fed, res)
		st, err = core.Resume(cfg, next, res)
		if err != nil {
			t.Fatalf("Resume refused a fitting result %s for %s: %v", core.DescribeResult(res), core.DescribeAction(a), err)
		}
		if err := CheckState(cfg, st); err != nil {
			t.Fatalf("after %s: %v", core.DescribeResult(res), err)
		}
	}
}

// Replay re-drives a run of cfg on input with recorded results and returns
// every action taken, for determinism checks.
func Replay(cfg core.Config, input string, results []core.Result) ([]core.Action, error) {
	st, err := core.Start(cfg, core.Request{Input: input})
	if err != nil {
		return nil, err
	}
	var actions []core.Action
	for _, r := range results {
		a, err := core.Step(cfg, st)
		if err != nil {
			return actions, err
		}
		actions = append(actions, a)
		if st, err = core.Resume(cfg, a.Next(), r); err != nil {
			return actions, err
		}
	}
	a, err := core.Step(cfg, st)
	if err != nil {
		return actions, err
	}
	return append(actions, a), nil
}

// stepChecked is Step on st, checked: the state it leads to keeps the
// invariants (CheckState), and Step on that state re-issues the same
// request unchanged.
func stepChecked(t *rapid.T, cfg core.Config, st core.State) core.Action {
	a, err := core.Step(cfg, st)
	if err != nil {
		t.Fatalf("Step: %v (%s)", err, core.DescribeState(st))
	}
	next := a.Next()
	if err := CheckState(cfg, next); err != nil {
		t.Fatalf("after %s: %v", core.DescribeAction(a), err)
	}
	again, err := core.Step(cfg, next)
	if err != nil || core.DescribeAction(again) != core.DescribeAction(a) || !sameState(again.Next(), next) {
		t.Fatalf("Step is not idempotent on %s", core.DescribeState(next))
	}
	return a
}

func restore(t *rapid.T, st core.State) core.State {
	b, err := core.EncodeState(st)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	back, err := core.DecodeState(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return back
}

func sameState(a, b core.State) bool {
	x, err1 := core.EncodeState(a)
	y, err2 := core.EncodeState(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func callIDs(calls []core.ToolCall) []string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	return ids
}

func firstDuplicate(list []string) string {
	seen := map[string]bool{}
	for _, s := range list {
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}
