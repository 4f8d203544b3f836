package coretest

import (
	"errors"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// CheckConversation drives a conversation of cfg to its end: input, then
// each of messages in turn, sent once the run answered or, when a draw
// says so, while it works (a queued message, or one that interrupts). At
// every step it checks what CheckRun checks (CheckState, Step idempotent,
// the state restored from its bytes goes on the same), and once the run
// has ended for good that a message is refused with ErrConversationEnded,
// the state unchanged. It returns the final state, the results it fed in,
// user messages included, in order, and the messages it sent.
func CheckConversation(t *rapid.T, cfg core.Config, input string, messages []string) (core.State, []core.Result, []string) {
	st, err := core.Start(cfg, core.Request{Input: input})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	maxSteps := cfg.Limits.MaxSteps
	if maxSteps == 0 {
		maxSteps = core.DefaultLimits().MaxSteps
	}
	var fed []core.Result
	var sent []string
	left := messages
	for i := 0; ; i++ {
		if i > (maxSteps+2)*(len(messages)+1)+len(messages) {
			t.Fatalf("conversation did not end within its limits: %s", core.DescribeState(st))
		}
		a := stepChecked(t, cfg, st)
		next := a.Next()
		if rapid.Bool().Draw(t, "restore") {
			next = restore(t, next)
		}
		var res core.Result
		switch a.(type) {
		case core.Fail:
			got, err := core.Resume(cfg, next, core.UserMessage{Content: "and then?"})
			if !errors.Is(err, core.ErrConversationEnded) || !sameState(got, next) {
				t.Fatalf("a message to an ended run: %v", err)
			}
			return next, fed, sent
		case core.Complete:
			if len(left) == 0 {
				return next, fed, sent
			}
			res = core.UserMessage{Content: left[0]}
			if got, err := core.Resume(cfg, next, res); errors.Is(err, core.ErrMessageTooLarge) {
				if !sameState(got, next) {
					t.Fatalf("a refused message changed the state")
				}
				return next, fed, sent // the conversation is full
			}
			sent, left = append(sent, left[0]), left[1:]
		default:
			if len(left) > 0 && rapid.IntRange(0, 4).Draw(t, "busy-message") == 0 {
				msg := core.UserMessage{Content: left[0]}
				busy, err := core.Resume(cfg, next, msg)
				if errors.Is(err, core.ErrMessageTooLarge) && sameState(busy, next) {
					left = nil // the conversation is full: no message fits
					st = next
					continue
				}
				if err != nil {
					t.Fatalf("Resume refused %s while the run works (%s): %v", core.DescribeResult(msg), core.DescribeState(next), err)
				}
				if err := CheckState(cfg, busy); err != nil {
					t.Fatalf("after %s: %v", core.DescribeResult(msg), err)
				}
				fed = append(fed, msg)
				sent, left = append(sent, left[0]), left[1:]
				st = busy
				continue
			}
			res = ResultFor(cfg, a).Draw(t, "result")
		}
		fed = append(fed, res)
		if st, err = core.Resume(cfg, next, res); err != nil {
			t.Fatalf("Resume refused a fitting result %s for %s: %v", core.DescribeResult(res), core.DescribeAction(a), err)
		}
		if err := CheckState(cfg, st); err != nil {
			t.Fatalf("after %s: %v", core.DescribeResult(res), err)
		}
	}
}

// ReplayConversation drives a run of cfg on input again with the results
// a drive fed in (CheckConversation's or CheckRun's), stepping before
// each, as the drive did. With restoreEach the state is encoded and decoded
// between every two calls, as a run resumed after every step would be. It
// returns the final state.
func ReplayConversation(cfg core.Config, input string, results []core.Result, restoreEach bool) (core.State, error) {
	st, err := core.Start(cfg, core.Request{Input: input})
	if err != nil {
		return st, err
	}
	roundTrip := func(st core.State) (core.State, error) {
		if !restoreEach {
			return st, nil
		}
		b, err := core.EncodeState(st)
		if err != nil {
			return st, err
		}
		return core.DecodeState(b)
	}
	for _, r := range results {
		a, err := core.Step(cfg, st)
		if err != nil {
			return st, err
		}
		st = a.Next()
		if st, err = roundTrip(st); err != nil {
			return st, err
		}
		if st, err = core.Resume(cfg, st, r); err != nil {
			return st, err
		}
		if st, err = roundTrip(st); err != nil {
			return st, err
		}
	}
	a, err := core.Step(cfg, st)
	if err != nil {
		return st, err
	}
	return a.Next(), nil
}

// Messages draws the user messages of a conversation.
func Messages() *rapid.Generator[[]string] {
	return rapid.SliceOfN(rapid.StringMatching(`[a-z]{1,8}( [a-z]{1,8}){0,3}\?`), 0, 5)
}

// Delivered checks that every message sent reached the conversation, in
// the order sent: each a user message of the log after the one before it,
// or, from the first not delivered on, waiting in the run's queue. It
// returns a description of the first message lost or out of order, or "".
func Delivered(st core.State, sent []string) string {
	at := 0
	for i, msg := range sent {
		found := false
		for at < len(st.Messages) {
			m := st.Messages[at]
			at++
			if m.Role == core.RoleUser && m.Content == msg {
				found = true
				break
			}
		}
		if found {
			continue
		}
		var queue []string
		if st.Conv != nil {
			queue = st.Conv.Queue
		}
		if strings.Join(queue, "\x00") != strings.Join(sent[i:], "\x00") {
			return "message " + msg + " is neither in the log after the one before it nor waiting in order (queue: " + strings.Join(queue, " | ") + ")"
		}
		return ""
	}
	return ""
}
