package shell_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// streamingModel streams its reply in pieces, after a failed attempt
// whose pieces are void, and returns the assembled reply.
type streamingModel struct {
	pieces []shell.ModelDelta
	reply  core.ModelReply
}

func (m streamingModel) Complete(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if req.OnDelta == nil || req.OnRetry == nil {
		return m.reply, nil
	}
	req.OnDelta(shell.ModelDelta{Kind: shell.DeltaText, Text: "Lost "})
	req.OnRetry(shell.ModelRetry{Attempt: 1, Wait: 1500 * time.Millisecond, Reason: "the stream broke off: unexpected EOF (key sk-live-0123456789)"})
	for _, d := range m.pieces {
		req.OnDelta(d)
	}
	return m.reply, nil
}

type eventLog struct {
	mu     sync.Mutex
	events []shell.Event
}

func (l *eventLog) Event(e shell.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// TestModelCallEvents: a streaming provider's pieces and retries become
// "calling", "delta" and "retry" events numbered from 1 within the call,
// after the step that asked for it; a secret split across pieces is
// redacted as they stream; the checkpoint holds the reply Complete
// returned, nothing of the pieces.
func TestModelCallEvents(t *testing.T) {
	const key = "sk-live-0123456789"
	model := streamingModel{
		pieces: []shell.ModelDelta{
			{Kind: shell.DeltaReasoning, Text: "Use the tool."},
			{Kind: shell.DeltaText, Text: "Your key is sk-li"},
			{Kind: shell.DeltaCall, Call: 0, Name: "probe", Text: `{"x":`},
			{Kind: shell.DeltaText, Text: "ve-0123456789, keep it."},
			{Kind: shell.DeltaCall, Call: 0, Text: `"1"}`},
		},
		reply: core.ModelReply{Text: "Done."},
	}
	db := openStore(t)
	ag := newAgent(t, model)
	ag.Secrets = []shell.Secret{{Name: "API_KEY", Value: key}}
	log := &eventLog{}
	out, err := shell.NewRunner(db, &shell.Options{Observer: log}).Start(context.Background(), ag, "hi")
	if err != nil || out.Status != "completed" {
		t.Fatalf("Start = %+v, %v", out, err)
	}
	var got []string
	for _, e := range log.events {
		if e.Kind == "calling" || e.Kind == "delta" || e.Kind == "retry" {
			got = append(got, fmt.Sprintf("%d.%d %s %s %q", e.Seq, e.Index, e.Kind, e.Part, e.Text))
		}
		if e.Kind == "calling" && (e.Start.IsZero() || time.Since(e.Start) > time.Minute) {
			t.Errorf("the calling event says the call began at %s", e.Start)
		}
	}
	want := []string{
		`1.0 calling  "primary model (1 message)"`,
		`1.1 delta text "Lost "`,
		`1.2 retry  "primary model: attempt 1 failed (the stream broke off: unexpected EOF (key [redacted:API_KEY])); retry in 1.5s"`,
		`1.3 delta reasoning "Use the tool."`,
		`1.4 delta text "Your key is "`,
		`1.5 delta call:probe "{\"x\":"`,
		`1.6 delta text "[redacted:API_KEY], keep it."`,
		`1.7 delta call:probe "\"1\"}"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rec, err := db.LoadStep(context.Background(), out.RunID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := rec.Result.(core.ModelReply); !ok || r.Text != "Done." {
		t.Errorf("step 2 holds %s, want the reply Complete returned", core.DescribeResult(rec.Result))
	}

	// Without an observer the provider is told of nobody.
	out, err = shell.NewRunner(db, nil).Start(context.Background(), newAgent(t, model), "hi")
	if err != nil || out.Answer != "Done." {
		t.Fatalf("Start = %+v, %v", out, err)
	}
}

// TestOpaqueIsRedacted: a provider's opaque data is JSON text, and a
// secret in it is replaced like anywhere else, leaving it JSON.
func TestOpaqueIsRedacted(t *testing.T) {
	x := shell.NewRedactor([]shell.Secret{{Name: "API_KEY", Value: "sk-live-0123456789"}})
	in := core.ModelReply{Opaque: &core.Opaque{Provider: "anthropic", Data: []byte(`[{"type":"thinking","thinking":"the key is sk-live-0123456789"}]`)}}
	out := x.Result(in).(core.ModelReply)
	if string(out.Opaque.Data) != `[{"type":"thinking","thinking":"the key is [redacted:API_KEY]"}]` || out.Opaque.Provider != "anthropic" {
		t.Errorf("redacted opaque %+v %s", out.Opaque, out.Opaque.Data)
	}
	if !strings.Contains(string(in.Opaque.Data), "sk-live") {
		t.Errorf("the caller's reply was changed")
	}
}
