package core_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// The score is in [0, 100] and depends on its inputs alone.
func TestPropScoreIsBoundedAndDeterministic(t *testing.T) {
	words := []string{"maybe", "perhaps", "I think", "I can't", "answer", "5", "as an AI", "not sure", " ", "could be"}
	rapid.Check(t, func(t *rapid.T) {
		text := strings.Join(rapid.SliceOfN(rapid.SampledFrom(words), 0, 8).Draw(t, "words"), " ")
		msg := core.Message{Role: core.RoleAssistant, Content: text}
		var prev *core.Message
		if rapid.Bool().Draw(t, "has-prev") {
			prev = &core.Message{Content: rapid.SampledFrom([]string{text, "other"}).Draw(t, "prev")}
		}
		usable := rapid.Bool().Draw(t, "usable")
		a := core.ScoreReply(msg, prev, usable, nil, nil)
		b := core.ScoreReply(msg, prev, usable, nil, nil)
		if a.Score < 0 || a.Score > 100 || a.String() != b.String() {
			t.Fatalf("%q: %s then %s", text, a, b)
		}
	})
}

// collaborationAgent pairs a primary with a helper.
func collaborationAgent(maxRetries int) core.Config {
	return core.Config{Name: "pair", Models: core.Models{Primary: "small", Helper: "big"},
		Limits:        core.Limits{MaxSteps: 200, MaxEscalations: 1},
		Collaboration: &core.Collaboration{Threshold: 0.7, MaxRetries: maxRetries}}
}

// The helper is asked at the max_retries-th low-quality reply in a row,
// never before; a good reply resets the count; once the helper has been
// asked (and no escalation is left), a low-quality answer stands.
func TestPropHelperAskedAfterMaxRetriesLowReplies(t *testing.T) {
	low := []string{"Maybe it is %d, I think, perhaps, not sure.", "I cannot say %d.", ""}
	rapid.Check(t, func(t *rapid.T) {
		retries := rapid.IntRange(1, 4).Draw(t, "max-retries")
		cfg := collaborationAgent(retries)
		// The primary's replies: good ones are tool calls (a final answer
		// would end the run), low ones are answers the run retries.
		kinds := rapid.SliceOfN(rapid.Bool(), 1, 12).Draw(t, "low")
		cfg.Tools = []core.Tool{{Name: "t", Parameters: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}}
		wantAsk := -1 // the reply at which the helper is asked
		run := 0
		for i, isLow := range kinds {
			if !isLow {
				run = 0
				continue
			}
			if run++; run == retries && wantAsk < 0 {
				wantAsk = i
			}
		}
		st, err := core.Start(cfg, core.Request{Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		next, asked, n := 0, -1, 0
		for {
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			var res core.Result
			switch a := a.(type) {
			case core.Complete:
				if asked < 0 && wantAsk >= 0 {
					t.Fatalf("completed %q without asking the helper (want at reply %d of %v)", a.Answer, wantAsk, kinds)
				}
				return
			case core.Fail:
				// Empty replies are corrected, as always, once the helper
				// cannot be asked any more: too many fail the run.
				if asked < 0 || a.Code != core.FailInvalidOutput {
					t.Fatalf("failed: %s", a.Reason)
				}
				return
			case core.RequestModelCall:
				if a.Role == core.Helper {
					if asked >= 0 {
						t.Fatal("the helper asked twice")
					}
					asked = next - 1
					if asked != wantAsk {
						t.Fatalf("helper asked at reply %d of %v (max_retries %d), want %d", asked, kinds, retries, wantAsk)
					}
					res = core.ModelReply{Text: "1. Try harder."}
					break
				}
				if next == len(kinds) {
					res = core.ModelReply{Text: "The answer is 42."}
					break
				}
				n++
				if kinds[next] {
					text := rapid.SampledFrom(low).Draw(t, "low-text")
					if text != "" {
						text = fmt.Sprintf(text, n)
					}
					res = core.ModelReply{Text: text}
				} else {
					res = core.ModelReply{Calls: []core.NativeCall{{Name: "t", Arguments: fmt.Sprintf(`{"n":%d}`, n)}}}
				}
				next++
			case core.RequestToolCalls:
				res = core.ToolResults{Results: []core.ToolResult{{CallID: a.Calls[0].ID, Output: "ok"}}}
			default:
				t.Fatalf("unexpected %s", core.DescribeAction(a))
			}
			if st, err = core.Resume(cfg, a.Next(), res); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// tools_used lists exactly the tools whose calls ran (a result came back
// for them), once a run has no turn left outstanding.
func TestPropToolsUsedAreToolsThatRan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs(coretest.AllFormats...).Draw(t, "cfg")
		if rapid.Bool().Draw(t, "policies") {
			cfg = coretest.PolicyConfigs(coretest.AllFormats...).Draw(t, "policy-cfg")
		}
		_, results := coretest.CheckRun(t, cfg, "input")
		actions, err := coretest.Replay(cfg, "input", results)
		if err != nil {
			t.Fatal(err)
		}
		var ran []string
		for i, r := range results {
			names := map[string]string{}
			switch a := actions[i].(type) {
			case core.RequestToolCalls:
				for _, c := range a.Calls {
					names[c.ID] = c.Name
				}
			case core.RequestExternalToolCalls:
				for _, c := range a.Calls {
					names[c.ID] = c.Name
				}
			case core.RequestMemorySearch:
				if _, ok := r.(core.MemoryHits); ok && a.CallID != "" {
					ran = appendOnce(ran, core.ToolMemorySearch)
				}
			case core.RequestMemoryCreate:
				if _, ok := r.(core.MemoryCreated); ok {
					ran = appendOnce(ran, core.ToolMemoryCreate)
				}
			case core.RequestMemoryTraverse:
				if _, ok := r.(core.MemoryTraversed); ok {
					ran = appendOnce(ran, core.ToolMemoryTraverse)
				}
			}
			if tr, ok := r.(core.ToolResults); ok {
				for _, x := range tr.Results {
					ran = appendOnce(ran, names[x.CallID])
				}
			}
		}
		final := actions[len(actions)-1].Next()
		if final.Turn != nil {
			t.Skip("the run ended with calls outstanding")
		}
		got, want := slices.Sorted(slices.Values(final.ToolsUsed)), slices.Sorted(slices.Values(ran))
		if !slices.Equal(got, want) {
			t.Fatalf("tools_used %v, but the tools that ran are %v", final.ToolsUsed, ran)
		}
	})
}

func appendOnce(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Under stop-on-error, a call skipped after a failure is not a use of its
// tool: tools_used lists the tools of the calls that came back.
func TestPropStopOnErrorListsOnlyToolsThatRan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := core.Config{Name: "soe", Models: core.Models{Primary: "m"}, Policy: core.Policy{StopOnError: true}}
		for _, n := range []string{"a", "b", "c", "d"} {
			cfg.Tools = append(cfg.Tools, core.Tool{Name: n, Parameters: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)})
		}
		st, err := core.Start(cfg, core.Request{Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		turns, n := rapid.IntRange(1, 4).Draw(t, "turns"), 0
		var ran []string
		for {
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			var res core.Result
			switch a := a.(type) {
			case core.Complete:
				if !slices.Equal(slices.Sorted(slices.Values(a.ToolsUsed)), slices.Sorted(slices.Values(ran))) {
					t.Fatalf("tools_used %v, ran %v", a.ToolsUsed, ran)
				}
				return
			case core.RequestModelCall:
				if turns == 0 {
					res = core.ModelReply{Text: "done"}
					break
				}
				turns--
				var calls []core.NativeCall
				for _, name := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c", "d"}), 1, 3, rapid.ID).Draw(t, "names") {
					n++
					calls = append(calls, core.NativeCall{Name: name, Arguments: fmt.Sprintf(`{"n":%d}`, n)})
				}
				res = core.ModelReply{Calls: calls}
			case core.RequestToolCalls:
				var rs []core.ToolResult
				for _, c := range a.Calls {
					ran = appendOnce(ran, c.Name)
					if rapid.IntRange(0, 2).Draw(t, "fails") == 0 {
						rs = append(rs, core.ToolResult{CallID: c.ID, Error: "boom"})
						break
					}
					rs = append(rs, core.ToolResult{CallID: c.ID, Output: "ok"})
				}
				res = core.ToolResults{Results: rs}
			default:
				t.Fatalf("unexpected %s", core.DescribeAction(a))
			}
			if st, err = core.Resume(cfg, a.Next(), res); err != nil {
				t.Fatal(err)
			}
		}
	})
}
