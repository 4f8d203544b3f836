package telemetry_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/stepwise-agent/stepwise/internal/otlptest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/telemetry"
)

// contentKeys are the attributes that carry message content.
var contentKeys = []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.retrieval.query.text"}

// TestContentOnlyWhenAskedForAndNeverSecrets: without content, no span
// carries a message, an argument or a result; with it, they are there, as
// stored: the secret a tool printed, and the one in the input, redacted.
func TestContentOnlyWhenAskedForAndNeverSecrets(t *testing.T) {
	t.Setenv("TRACE_TEST_SECRET", secret)
	for _, content := range []bool{false, true} {
		st := openStore(t)
		l := startLive(t)
		ag := loadAgent(t, writeBatchAgent(t))
		r := shell.NewRunner(st, &shell.Options{Observer: telemetry.NewObserver(l.tp, st, telemetry.Options{Content: content})})
		out, err := r.Start(context.Background(), ag, "Add 1 and 2; the token is "+secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, spans := range [][]otlptest.Span{l.spans(t), stored(t, st, out.RunID, content)} {
			var all strings.Builder
			found := map[string]bool{}
			for _, s := range spans {
				for k, v := range s.Attributes {
					all.WriteString(v + "\n")
					for _, c := range contentKeys {
						if k == c {
							found[k] = true
						}
					}
				}
			}
			if !content && len(found) > 0 {
				t.Errorf("content off, yet the spans carry %v", found)
			}
			if content && (!found["gen_ai.input.messages"] || !found["gen_ai.output.messages"] || !found["gen_ai.system_instructions"] ||
				!found["gen_ai.tool.call.arguments"] || !found["gen_ai.tool.call.result"]) {
				t.Errorf("content on, the spans carry only %v", found)
			}
			if strings.Contains(all.String(), secret) {
				t.Errorf("a span holds the secret")
			}
			if content && !strings.Contains(all.String(), "the token is [redacted:TRACE_TEST_SECRET]") {
				t.Errorf("the leaking tool's output is not there, redacted:\n%s", all.String())
			}
		}
	}
}

// TestStoredCallTimesComeFromTheJournal: the calls of a batch take the
// times their intents recorded, inside the step's window, not the window.
func TestStoredCallTimesComeFromTheJournal(t *testing.T) {
	t.Setenv("TRACE_TEST_SECRET", secret)
	st := openStore(t)
	ag := loadAgent(t, writeBatchAgent(t))
	ctx := context.Background()
	out, err := shell.NewRunner(st, nil).Start(ctx, ag, "Add 1 and 2")
	if err != nil {
		t.Fatal(err)
	}
	run, err := telemetry.ReadRun(ctx, st, out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	intents, err := st.Intents(ctx, out.RunID, 2)
	if err != nil || len(intents) != 3 {
		t.Fatalf("intents of the batch: %v %v", intents, err)
	}
	step2, _ := st.LoadStep(ctx, out.RunID, 2)
	step3, _ := st.LoadStep(ctx, out.RunID, 3)
	n := 0
	for _, c := range run.Calls {
		if c.Seq != 2 {
			continue
		}
		n++
		for _, in := range intents {
			if in.Tool == c.Name && (!c.Start.Equal(in.Started) || !c.End.Equal(in.Completed)) {
				t.Errorf("call %s: %v..%v, its intent %v..%v", c.Name, c.Start, c.End, in.Started, in.Completed)
			}
		}
		if c.Start.Before(step2.Created) || c.End.After(step3.Created) || (c.Start.Equal(step2.Created) && c.End.Equal(step3.Created)) {
			t.Errorf("call %s: %v..%v, the step's window %v..%v", c.Name, c.Start, c.End, step2.Created, step3.Created)
		}
	}
	if n != 3 {
		t.Fatalf("%d calls at step 2, want 3: %+v", n, run.Calls)
	}
}

// TestTheSameRunGivesTheSameBytes: a stored run's trace is the same bytes
// each time it is read.
func TestTheSameRunGivesTheSameBytes(t *testing.T) {
	st := openStore(t)
	ag := loadAgent(t, "../../testdata/agents/external.toml")
	ctx := context.Background()
	out, err := shell.NewRunner(st, nil).Start(ctx, ag, "Buy a desk lamp")
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for i := range 3 {
		run, err := telemetry.ReadRun(ctx, st, out.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := telemetry.WriteJSON(&buf, telemetry.JSONResource(os.Getenv), run.Spans(i%2 == 0)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = buf.Bytes()
		} else if i == 2 && !bytes.Equal(buf.Bytes(), first) {
			t.Fatalf("two reads differ:\n%s\n%s", first, buf.Bytes())
		}
	}
}

// TestIDsAreDerived: ids depend on the run, the step and the call alone;
// pinned, because a live trace and a later `stepwise trace` of the same
// run, from another build, must agree.
func TestIDsAreDerived(t *testing.T) {
	if got := telemetry.TraceID("r1").String(); got != pinnedTrace {
		t.Errorf("TraceID(r1) = %s, pinned %s", got, pinnedTrace)
	}
	if got := telemetry.RunSpanID("r1").String(); got != pinnedRun {
		t.Errorf("RunSpanID(r1) = %s, pinned %s", got, pinnedRun)
	}
	seen := map[trace.SpanID]string{}
	for _, c := range []struct {
		name string
		id   trace.SpanID
	}{
		{"run r1", telemetry.RunSpanID("r1")}, {"run r2", telemetry.RunSpanID("r2")},
		{"r1 step 1", telemetry.StepSpanID("r1", 1)}, {"r1 step 2", telemetry.StepSpanID("r1", 2)}, {"r2 step 1", telemetry.StepSpanID("r2", 1)},
		{"r1 step 1 call a", telemetry.CallSpanID("r1", 1, "a")}, {"r1 step 1 call b", telemetry.CallSpanID("r1", 1, "b")},
		{"r1 step 11 call a", telemetry.CallSpanID("r1", 11, "a")}, {"r1 step 1 call 1a", telemetry.CallSpanID("r1", 1, "1a")},
	} {
		if !c.id.IsValid() {
			t.Errorf("%s: invalid id", c.name)
		}
		if other, dup := seen[c.id]; dup {
			t.Errorf("%s and %s share an id", c.name, other)
		}
		seen[c.id] = c.name
	}
	if telemetry.TraceID("r1") == telemetry.TraceID("r2") {
		t.Error("two runs share a trace id")
	}
}

// The pinned ids: the first 16 and 8 bytes of SHA-256 of
// "stepwise.telemetry\x00trace\x00r1\x00" and "...\x00run\x00r1\x00".
const (
	pinnedTrace = "6e040f3967c289edbadbc3da40ec15e7"
	pinnedRun   = "b4bf957d4772cef6"
)
