package shell_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// echoModel answers with the user messages it sees since its last answer,
// so a test reads what the model was given; calls, when set, may make the
// reply tool calls instead.
type echoModel struct {
	calls func(req shell.ModelRequest) []core.NativeCall
}

func (m echoModel) Complete(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if m.calls != nil {
		if calls := m.calls(req); calls != nil {
			return core.ModelReply{Calls: calls}, nil
		}
	}
	var seen []string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := req.Messages[i]
		if msg.Role == core.RoleAssistant && msg.Content != "" && len(msg.Calls) == 0 {
			break
		}
		if msg.Role == core.RoleUser {
			seen = append([]string{msg.Content}, seen...)
		}
	}
	return core.ModelReply{Text: "heard: " + strings.Join(seen, " | ")}, nil
}

// A message sent while another driver holds the run, busy in a tool call,
// is stored at once (Say reports ErrBusy, the message queued) and the
// driver delivers it before its next model call, as a step of its own.
// Two racing senders both land, in the order the store numbered them.
func TestMessagesToARunAtWorkReachTheNextModelCall(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	slow := fnTool{spec: core.Tool{Name: "slow", Parameters: []byte(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
		close(started)
		<-release
		return core.ToolResult{CallID: c.ID, Output: "done"}
	}}
	model := echoModel{calls: func(req shell.ModelRequest) []core.NativeCall {
		if req.Call == 1 {
			return []core.NativeCall{{ID: "s1", Name: "slow", Arguments: `{}`}}
		}
		return nil
	}}
	ag := newAgent(t, model, slow)
	driver := shell.NewRunner(db, nil)
	done := make(chan shell.Outcome, 1)
	errc := make(chan error, 1)
	go func() {
		out, err := driver.Start(ctx, ag, "start the slow job")
		done <- out
		errc <- err
	}()
	<-started
	runs, _ := db.ListRuns(ctx, store.Filter{})
	id := runs[0].ID
	other := shell.NewRunner(db, nil)
	var wg sync.WaitGroup
	var ns [2]int
	for _, msg := range []string{"first", "second"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := other.Say(ctx, ag, id, msg)
			if !errors.Is(err, shell.ErrBusy) {
				t.Errorf("Say %q to a run at work: %v, want ErrBusy (queued)", msg, err)
			}
		}()
	}
	wg.Wait()
	inbox, err := db.Inbox(ctx, id)
	if err != nil || len(inbox) != 2 {
		t.Fatalf("the inbox holds %d messages (%v), want both", len(inbox), err)
	}
	ns[0], ns[1] = inbox[0].N, inbox[1].N
	close(release)
	out := <-done
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("heard: start the slow job | %s | %s", inbox[0].Content, inbox[1].Content)
	if out.Status != store.StatusCompleted || out.Answer != want {
		t.Fatalf("the driver's answer %q (%s), want %q", out.Answer, out.Status, want)
	}
	if left, _ := db.Inbox(ctx, id); len(left) != 0 || ns[0] >= ns[1] {
		t.Fatalf("left in the inbox: %v (numbers %v)", left, ns)
	}
	info, _ := db.Run(ctx, id)
	if info.Turns != 3 {
		t.Fatalf("turns %d, want 3", info.Turns)
	}
	var users []string
	_ = db.Steps(ctx, id, func(rec store.StepRecord) error {
		if m, ok := rec.Result.(core.UserMessage); ok {
			users = append(users, m.Content)
		}
		return nil
	})
	if len(users) != 2 || users[0] != inbox[0].Content || users[1] != inbox[1].Content {
		t.Fatalf("message steps %v, want one each in the inbox's order", users)
	}
	rep, err := shell.Replay(ctx, db, id, ag.Config)
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay: %+v %v", rep.Diverged, err)
	}
}

// With on_message = "interrupt", a message to a run paused for external
// calls ends the turn: the calls not run get an error result, the later
// internal call never runs, and the model answers the message.
func TestInterruptingAPause(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ran := 0
	after := fnTool{spec: core.Tool{Name: "after", Parameters: []byte(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
		ran++
		return core.ToolResult{CallID: c.ID, Output: "ran"}
	}}
	model := echoModel{calls: func(req shell.ModelRequest) []core.NativeCall {
		if req.Call == 1 {
			return []core.NativeCall{{ID: "e1", Name: "ask", Arguments: `{}`}, {ID: "a1", Name: "after", Arguments: `{}`}}
		}
		return nil
	}}
	ag := newAgent(t, model, after)
	ag.Config.Tools = append(ag.Config.Tools, external("ask"))
	ag.Config.Conversation.OnMessage = core.OnInterrupt
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "ask, then go on")
	if err != nil || out.Status != store.StatusAwaitingToolResults {
		t.Fatalf("start: %+v %v", out, err)
	}
	out, err = r.Say(ctx, ag, out.RunID, "never mind, stop")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "heard: ask, then go on | never mind, stop" {
		t.Fatalf("say: %+v %v", out, err)
	}
	if ran != 0 {
		t.Fatalf("the call after the pause ran %d times", ran)
	}
	rec, _ := db.LoadLatest(ctx, out.RunID)
	var interrupted int
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleTool && m.IsError && strings.Contains(m.Content, "the user sent a new message") {
			interrupted++
		}
	}
	if interrupted != 2 {
		t.Fatalf("%d calls answered as interrupted, want 2", interrupted)
	}
	if _, err := r.Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "e1", Output: "late"}}}); err == nil {
		t.Fatal("a late result for an interrupted call was taken")
	}
	rep, err := shell.Replay(ctx, db, out.RunID, ag.Config)
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay: %+v %v", rep.Diverged, err)
	}
}

// Messages are refused before anything is stored: empty, too large, to an
// unknown run, to a failed one; and Pool.Message leaves a woken run for a
// worker.
func TestMessageRefusalsAndThePoolForm(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, echoModel{})
	ag.Config.Conversation.MaxMessageBytes = 10
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "hi")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("start: %+v %v", out, err)
	}
	for _, c := range []struct {
		id, msg string
		want    error
	}{
		{out.RunID, "  ", core.ErrEmptyMessage},
		{out.RunID, "far too long", core.ErrMessageTooLarge},
		{"r-none", "hello", store.ErrNotFound},
	} {
		if _, err := r.Say(ctx, ag, c.id, c.msg); !errors.Is(err, c.want) {
			t.Errorf("Say(%q, %q): %v, want %v", c.id, c.msg, err, c.want)
		}
	}
	if inbox, _ := db.Inbox(ctx, out.RunID); len(inbox) != 0 {
		t.Fatalf("a refused message was stored: %v", inbox)
	}
	o, err := r.Pool().Message(ctx, ag, out.RunID, "again?")
	if err != nil || o.Status != store.StatusRunning {
		t.Fatalf("Pool.Message: %+v %v", o, err)
	}
	if o := claimAndDrive(t, db, r, ag); o.Status != store.StatusCompleted || o.Answer != "heard: again?" {
		t.Fatalf("the worker's drive: %+v", o)
	}
	if _, err := r.Cancel(ctx, ag, out.RunID, "bye"); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := r.Say(ctx, ag, out.RunID, "hello?"); !errors.Is(err, core.ErrConversationEnded) || !errors.Is(err, shell.ErrRunEnded) {
		t.Fatalf("a message to a closed conversation: %v", err)
	}
}
