package core

import (
	"fmt"
	"strings"
	"testing"
)

// A conversation of 1,000 user turns, each a tool call returning 10 KB and
// an answer, completes under a bound of 32k tokens: every request fits,
// old results are elided, summaries are asked for and stand in for the
// oldest turns, and the system prompt and the first message stay.
func TestThousandTurnsFitA32kWindow(t *testing.T) {
	cfg := testConfig()
	cfg.Models.Helper = "helper"
	cfg.Limits.MaxStateBytes = 1 << 30
	cfg.Context = &ContextPolicy{MaxTokens: 32_000, KeepTurns: 4}
	st := mustStart(t, cfg, "first question")
	page := strings.Repeat("0123456789", 1024)
	summaries, maxSent := 0, 0
	for turn := 1; turn <= 1000; turn++ {
		if turn > 1 {
			st = mustResume(t, cfg, st, UserMessage{Content: fmt.Sprintf("question %d", turn)})
		}
		for answered := false; !answered; {
			a := mustStep(t, cfg, st)
			var res Result
			switch a := a.(type) {
			case RequestModelCall:
				if a.State.Phase == PhaseCompact {
					summaries++
					res = ModelReply{Text: fmt.Sprintf("summary %d: the user asked questions, pages were fetched", summaries)}
					break
				}
				n := RequestTokens(cfg, a)
				if n > 32_000 {
					t.Fatalf("turn %d: a request of %d tokens", turn, n)
				}
				maxSent = max(maxSent, n)
				if a.Messages[0].Role != RoleSystem || a.Messages[1].Content != "first question" {
					t.Fatalf("turn %d: the head is gone: %s", turn, DescribeMessage(a.Messages[1]))
				}
				if last := a.Messages[len(a.Messages)-1]; last.Role == RoleTool {
					res = ModelReply{Text: fmt.Sprintf("answer %d", turn)}
				} else {
					res = ModelReply{Calls: []NativeCall{call(fmt.Sprintf("t%d", turn), "search", fmt.Sprintf(`{"query":"q%d"}`, turn))}}
				}
			case RequestToolCalls:
				res = ToolResults{Results: []ToolResult{{CallID: a.Calls[0].ID, Output: page}}}
			case Complete:
				if a.Answer != fmt.Sprintf("answer %d", turn) {
					t.Fatalf("turn %d answered %q", turn, a.Answer)
				}
				answered = true
				continue
			default:
				t.Fatalf("turn %d: %s", turn, DescribeAction(a))
			}
			st = mustResume(t, cfg, a.Next(), res)
		}
	}
	if summaries < 1 || st.Ctx == nil || st.Ctx.Summary == 0 || st.Ctx.ElideBelow == 0 {
		t.Fatalf("%d summaries; context %+v", summaries, st.Ctx)
	}
	t.Logf("1000 turns: %d summaries, largest request %d tokens, %d messages in the log", summaries, maxSent, len(st.Messages))
}

// The view a stored step restores is the request that was made: the
// action decoded from its bytes and the state carries the same messages.
func TestCompactedRequestsDecodeExactly(t *testing.T) {
	cfg := testConfig()
	cfg.Context = &ContextPolicy{MaxTokens: 600, KeepTurns: 1}
	st := mustStart(t, cfg, "q")
	for i := 0; i < 6; i++ {
		a := mustStep(t, cfg, st)
		switch a := a.(type) {
		case RequestModelCall:
			if a.State.Phase == PhaseCompact {
				st = mustResume(t, cfg, a.Next(), ModelReply{Text: "a summary"})
				continue
			}
			b, err := EncodeAction(a)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeAction(b, a.State)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(back.(RequestModelCall).Messages) != fmt.Sprint(a.Messages) {
				t.Fatalf("step %d: the decoded request differs", i)
			}
			st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call(fmt.Sprintf("c%d", i), "search", fmt.Sprintf(`{"query":"%d"}`, i))}})
		case RequestToolCalls:
			st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: a.Calls[0].ID, Output: strings.Repeat("r", 1500)}}})
		default:
			t.Fatalf("%s", DescribeAction(a))
		}
	}
	if !st.Ctx.compacted() {
		t.Fatalf("never compacted: %+v", st.Ctx)
	}
}

// A provider that refuses a request as too long: the conversation is
// compacted and the request made again, once; a second refusal fails.
func TestProviderOverflowCompactsAndRetriesOnce(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "q")
	for i := 0; i < 3; i++ {
		a := mustStep(t, cfg, st)
		st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call(fmt.Sprintf("c%d", i), "search", fmt.Sprintf(`{"query":"%d"}`, i))}})
		a = mustStep(t, cfg, st)
		st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: fmt.Sprintf("c%d", i), Output: strings.Repeat("r", 8000)}}})
	}
	a := mustStep(t, cfg, st)
	before := RequestTokens(cfg, a.(RequestModelCall))
	st = mustResume(t, cfg, a.Next(), ModelReply{Error: "400: context_length_exceeded", Overflow: true})
	if st.Phase != PhaseModel || st.Ctx == nil || !st.Ctx.Retried || st.Ctx.Limit >= before {
		t.Fatalf("after the refusal: %s %+v", DescribeState(st), st.Ctx)
	}
	a = mustStep(t, cfg, st)
	if m, ok := a.(RequestModelCall); ok && m.State.Phase == PhaseCompact {
		st = mustResume(t, cfg, a.Next(), ModelReply{Text: "summary"})
		a = mustStep(t, cfg, st)
	}
	m, ok := a.(RequestModelCall)
	if !ok || RequestTokens(cfg, m) > st.Ctx.Limit {
		t.Fatalf("the retry: %s (%d tokens, bound %d)", DescribeAction(a), RequestTokens(cfg, m), st.Ctx.Limit)
	}
	st = mustResume(t, cfg, a.Next(), ModelReply{Error: "400: context_length_exceeded", Overflow: true})
	if f, ok := mustStep(t, cfg, st).(Fail); !ok || f.Code != FailModelError {
		t.Fatalf("a second refusal: %s", DescribeState(st))
	}
}
