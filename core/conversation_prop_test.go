package core_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// conversationConfigs draws agents of every format and policy, half of
// them interrupting the turn in flight when a message comes.
func conversationConfigs() *rapid.Generator[core.Config] {
	return rapid.Custom(func(t *rapid.T) core.Config {
		cfg := coretest.PolicyConfigs(coretest.AllFormats...).Draw(t, "cfg")
		if rapid.Bool().Draw(t, "interrupt") {
			cfg.Conversation.OnMessage = core.OnInterrupt
		}
		return cfg
	})
}

// A conversation of N turns, with messages sent at rest and at work, ends
// in the same bytes whether it is driven in one process or resumed from
// its encoded state between every two calls; every message sent is in the
// log in the order sent (or still queued, in that order, when the run
// ended first).
func TestPropConversationSameBytesEitherWay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := conversationConfigs().Draw(t, "cfg")
		final, fed, sent := coretest.CheckConversation(t, cfg, "first question?", coretest.Messages().Draw(t, "messages"))
		if why := coretest.Delivered(final, sent); why != "" {
			t.Fatal(why)
		}
		want, err := core.EncodeState(final)
		if err != nil {
			t.Fatal(err)
		}
		for _, restoreEach := range []bool{false, true} {
			again, err := coretest.ReplayConversation(cfg, "first question?", fed, restoreEach)
			if err != nil {
				t.Fatalf("replay (restore each step: %v): %v", restoreEach, err)
			}
			got, err := core.EncodeState(again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("replay (restore each step: %v) ends in other bytes:\n%s\nwant\n%s", restoreEach, core.DescribeState(again), core.DescribeState(final))
			}
		}
	})
}

// At rest between turns, no native call is left without its result, and
// the limits count from the turn's start: a conversation never fails
// max_steps on a turn that stayed under it.
func TestPropConversationAtRestIsWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := conversationConfigs().Draw(t, "cfg")
		final, _, _ := coretest.CheckConversation(t, cfg, "q?", coretest.Messages().Draw(t, "messages"))
		if final.Phase != core.PhaseDone {
			return
		}
		answered := map[string]bool{}
		for _, m := range final.Messages {
			if m.Role == core.RoleTool {
				answered[m.CallID] = true
			}
		}
		for _, m := range final.Messages {
			for _, c := range m.Calls {
				if !answered[c.ID] {
					t.Fatalf("call %s has no result at rest", c.ID)
				}
			}
		}
	})
}

// A message that does not fit is refused with a sentinel error, and the
// state is left exactly as it was: an empty one, one over the agent's
// limit, and any message to a run that failed or was cancelled.
func TestPropRefusedMessagesChangeNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := conversationConfigs().Draw(t, "cfg")
		cfg.Conversation.MaxMessageBytes = 64
		final, _ := coretest.CheckRun(t, cfg, "q?")
		before, _ := core.EncodeState(final)
		for _, c := range []struct {
			msg  string
			want error
		}{
			{"", core.ErrEmptyMessage},
			{" \n\t", core.ErrEmptyMessage},
			{strings.Repeat("x", 65), core.ErrMessageTooLarge},
		} {
			got, err := core.Resume(cfg, final, core.UserMessage{Content: c.msg})
			after, _ := core.EncodeState(got)
			if !errors.Is(err, c.want) || !bytes.Equal(before, after) {
				t.Fatalf("message %q: %v, state changed: %v", c.msg, err, !bytes.Equal(before, after))
			}
		}
		got, err := core.Resume(cfg, final, core.UserMessage{Content: "and then?"})
		if final.Phase == core.PhaseFailed {
			after, _ := core.EncodeState(got)
			if !errors.Is(err, core.ErrConversationEnded) || !bytes.Equal(before, after) {
				t.Fatalf("a message to a failed run: %v", err)
			}
		} else if errors.Is(err, core.ErrMessageTooLarge) {
			if after, _ := core.EncodeState(got); !bytes.Equal(before, after) {
				t.Fatalf("a message the conversation has no room for changed the state")
			}
		} else if err != nil || got.Phase != core.PhaseModel {
			t.Fatalf("a message to a run that answered: %v (%s)", err, core.DescribeState(got))
		}
	})
}
