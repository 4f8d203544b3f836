package telemetry_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/otlptest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/shell/telemetry"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

const secret = "tok-7f3a9c1e5b2d8046"

// batchAgent runs three calls of one turn in parallel (one fails, one
// prints a secret), then its script runs out: the model fails, and so
// does the run.
const batchAgent = `name = "batcher"
system_prompt = "You add numbers."
format = "native"

[models.primary]
provider = "script"
script = "batch.jsonl"

[policy]
parallel = true

[[tools]]
name = "add"
description = "Add two integers."
command = ["expr", "{{a}}", "+", "{{b}}"]
idempotent = true
parameters = '''{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}'''

[[tools]]
name = "broken"
command = ["sh", "-c", "echo it broke >&2; exit 3"]

[[tools]]
name = "leak"
command = ["sh", "-c", "echo the token is $TRACE_TEST_SECRET"]
secrets = ["TRACE_TEST_SECRET"]
`

const batchScript = `{"text": "Three at once.", "tool_calls": [{"id": "b1", "name": "add", "arguments": {"a": 1, "b": 2}}, {"id": "b2", "name": "broken", "arguments": {}}, {"id": "b3", "name": "leak", "arguments": {}}], "usage": {"prompt_tokens": 31, "completion_tokens": 7}}
`

func openStore(t *testing.T) *sqlite.SQLite {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func loadAgent(t *testing.T, path string) *shell.Agent {
	t.Helper()
	spec, err := agent.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ag.Close != nil {
			ag.Close()
		}
	})
	return ag
}

func writeBatchAgent(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "batch.jsonl"), []byte(batchScript), 0o644)
	path := filepath.Join(dir, "batch.toml")
	os.WriteFile(path, []byte(batchAgent), 0o644)
	return path
}

// live is a tracer provider from the environment, exporting to an
// in-process OTLP receiver.
type live struct {
	rcv *otlptest.Receiver
	tp  *sdktrace.TracerProvider
}

func startLive(t *testing.T) live {
	t.Helper()
	rcv := otlptest.Start(t)
	t.Setenv(telemetry.EnvEndpoint, rcv.URL)
	tp, err := telemetry.ProviderFromEnv(context.Background(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return live{rcv, tp}
}

func (l live) spans(t *testing.T) []otlptest.Span {
	t.Helper()
	if err := l.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l.rcv.Spans()
}

// stored is the trace of a stored run as `stepwise trace` writes it,
// posted as OTLP/JSON to a receiver and decoded there.
func stored(t *testing.T, st store.Runs, runID string, content bool) []otlptest.Span {
	t.Helper()
	run, err := telemetry.ReadRun(context.Background(), st, runID)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := telemetry.WriteJSON(&buf, telemetry.JSONResource(os.Getenv), run.Spans(content)); err != nil {
		t.Fatal(err)
	}
	rcv := otlptest.Start(t)
	resp, err := http.Post(rcv.URL+"/v1/traces", "application/json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the receiver refused the OTLP/JSON: %s", resp.Status)
	}
	return rcv.Spans()
}

// sameTrace checks that the live spans and the stored trace are the same
// spans: ids, parents, names, kinds, attributes and statuses; only times
// may differ, and the live ones lie within the run.
func sameTrace(t *testing.T, liveSpans, storedSpans []otlptest.Span) {
	t.Helper()
	byID := map[string]otlptest.Span{}
	for _, s := range liveSpans {
		if _, dup := byID[s.SpanID]; dup {
			t.Errorf("live span %s %q emitted twice", s.SpanID, s.Name)
		}
		byID[s.SpanID] = s
	}
	if len(liveSpans) != len(storedSpans) {
		t.Errorf("%d live spans, %d stored:\nlive:   %v\nstored: %v", len(liveSpans), len(storedSpans), names(liveSpans), names(storedSpans))
	}
	root := storedSpans[0]
	for _, w := range storedSpans {
		g, ok := byID[w.SpanID]
		if !ok {
			t.Errorf("no live span %s %q", w.SpanID, w.Name)
			continue
		}
		if g.TraceID != w.TraceID || g.Parent != w.Parent || g.Name != w.Name || g.Kind != w.Kind || g.Status != w.Status ||
			g.StatusMessage != w.StatusMessage || !slices.Equal(g.Links, w.Links) {
			t.Errorf("span %s:\nlive   %+v\nstored %+v", w.SpanID, g, w)
		}
		for k, v := range w.Attributes {
			if g.Attributes[k] != v {
				t.Errorf("span %q attribute %s: live %q, stored %q", w.Name, k, g.Attributes[k], v)
			}
		}
		for k := range g.Attributes {
			if _, ok := w.Attributes[k]; !ok {
				t.Errorf("span %q: live has %s, stored has not", w.Name, k)
			}
		}
		if g.Start > g.End || g.Start < root.Start || g.End > root.End {
			t.Errorf("live span %q runs %d..%d, outside the run %d..%d", g.Name, g.Start, g.End, root.Start, root.End)
		}
	}
}

func names(spans []otlptest.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// TestLiveSpansAreTheStoredTrace drives agents of every shape with the
// Observer exporting to an OTLP receiver, then builds the trace of the
// stored run: the two are the same spans, with usage and tool call ids.
func TestLiveSpansAreTheStoredTrace(t *testing.T) {
	t.Setenv("TRACE_TEST_SECRET", secret)
	for _, tc := range []struct {
		agent   string
		input   string
		results string // answers for a pause
		names   []string
		check   func(t *testing.T, spans []otlptest.Span)
	}{
		{agent: "../../testdata/agents/analyst.toml", input: "cost?",
			names: []string{"invoke_agent analyst", "chat script:analyst.jsonl", "execute_tool list_files", "chat script:analyst.jsonl",
				"execute_tool read_file", "chat script:analyst.jsonl", "execute_tool add", "chat script:analyst.jsonl"},
			check: func(t *testing.T, spans []otlptest.Span) {
				want(t, spans[6], "gen_ai.tool.call.id", "s1")
				want(t, spans[6], "gen_ai.tool.description", "Add two integers.")
				want(t, spans[0], "stepwise.run.status", "completed")
			}},
		{agent: "../../testdata/agents/external.toml", input: "Buy a desk lamp", results: "../../testdata/results/approve.json",
			names: []string{"invoke_agent shopper", "chat script:external.jsonl", "execute_tool read_file", "chat script:external.jsonl",
				"execute_tool approve_purchase", "chat script:external.jsonl"},
			check: func(t *testing.T, spans []otlptest.Span) {
				want(t, spans[1], "gen_ai.usage.input_tokens", "120")
				want(t, spans[1], "gen_ai.usage.output_tokens", "18")
				want(t, spans[0], "gen_ai.usage.input_tokens", "520")
				want(t, spans[0], "gen_ai.usage.output_tokens", "54")
				want(t, spans[4], "gen_ai.tool.call.id", "call_approve")
				want(t, spans[4], "gen_ai.tool.type", "function")
				want(t, spans[4], "stepwise.tool.mode", "external")
				want(t, spans[2], "gen_ai.tool.type", "extension")
			}},
		{agent: "../../testdata/agents/escalate.toml", input: "100 C in F?",
			names: []string{"invoke_agent escalator", "chat script:escalate.jsonl", "chat script:escalate.jsonl", "chat script:escalate.jsonl",
				"execute_tool add", "chat script:escalate.jsonl"},
			check: func(t *testing.T, spans []otlptest.Span) {
				want(t, spans[2], "stepwise.model.role", "helper")
				want(t, spans[3], "stepwise.model.role", "primary")
			}},
		{agent: "../../testdata/agents/memory.toml", input: "What does Sarah like?",
			names: []string{"invoke_agent rememberer", "retrieval rememberer", "chat script:memory.jsonl", "execute_tool memory_create",
				"chat script:memory.jsonl", "execute_tool memory_search", "execute_tool memory_traverse", "chat script:memory.jsonl"},
			check: func(t *testing.T, spans []otlptest.Span) {
				want(t, spans[1], "gen_ai.operation.name", "retrieval")
				want(t, spans[1], "gen_ai.data_source.id", "rememberer")
				want(t, spans[3], "gen_ai.tool.call.id", "m1")
			}},
		{agent: "../../testdata/agents/looper.toml", input: "Weather in Oslo?",
			check: func(t *testing.T, spans []otlptest.Span) {
				want(t, spans[0], "error.type", "loop")
				if spans[0].Status != 2 || !strings.Contains(spans[0].StatusMessage, "same arguments") {
					t.Errorf("a failed run's root: status %d %q", spans[0].Status, spans[0].StatusMessage)
				}
			}},
		{agent: "batch", input: "Add 1 and 2; the token is " + secret,
			names: []string{"invoke_agent batcher", "chat script:batch.jsonl", "execute_tool add", "execute_tool broken", "execute_tool leak",
				"chat script:batch.jsonl"},
			check: func(t *testing.T, spans []otlptest.Span) {
				want(t, spans[3], "error.type", "_OTHER")
				if spans[3].Status != 2 || !strings.Contains(spans[3].StatusMessage, "it broke") {
					t.Errorf("a failed call: status %d %q", spans[3].Status, spans[3].StatusMessage)
				}
				if spans[5].Status != 2 || spans[0].Status != 2 {
					t.Errorf("the model's failure is not on its chat span and the run: %+v %+v", spans[5], spans[0])
				}
				want(t, spans[0], "error.type", "model_error")
			}},
	} {
		t.Run(filepath.Base(tc.agent), func(t *testing.T) {
			path := tc.agent
			if path == "batch" {
				path = writeBatchAgent(t)
			}
			st := openStore(t)
			l := startLive(t)
			ag := loadAgent(t, path)
			r := shell.NewRunner(st, &shell.Options{Observer: telemetry.NewObserver(l.tp, st, telemetry.Options{Content: true, OnError: func(err error) { t.Error(err) }})})
			out, err := r.Start(context.Background(), ag, tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if tc.results != "" {
				data, _ := os.ReadFile(tc.results)
				ans, err := shell.ParseResults(data)
				if err != nil {
					t.Fatal(err)
				}
				if out, err = r.Submit(context.Background(), ag, out.RunID, ans); err != nil {
					t.Fatal(err)
				}
			}
			if !out.Status.Ended() {
				t.Fatalf("the run did not end: %+v", out)
			}
			storedSpans := stored(t, st, out.RunID, true)
			sameTrace(t, l.spans(t), storedSpans)
			if tc.names != nil && !slices.Equal(names(storedSpans), tc.names) {
				t.Errorf("spans:\n%q\nwant\n%q", names(storedSpans), tc.names)
			}
			for _, s := range storedSpans {
				if s.TraceID != telemetry.TraceID(out.RunID).String() {
					t.Errorf("span %q is in trace %s", s.Name, s.TraceID)
				}
				if s.Name != storedSpans[0].Name && s.Parent != storedSpans[0].SpanID {
					t.Errorf("span %q is not a child of the run's span", s.Name)
				}
				for k, v := range s.Attributes {
					if strings.Contains(v, secret) {
						t.Errorf("span %q attribute %s holds the secret: %s", s.Name, k, v)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, storedSpans)
			}
		})
	}
}

func want(t *testing.T, s otlptest.Span, key, value string) {
	t.Helper()
	if got, ok := s.Attributes[key]; !ok || got != value {
		t.Errorf("span %q: %s = %q (set: %v), want %q", s.Name, key, got, ok, value)
	}
}

// TestAForkIsItsOwnTraceLinkedToItsParent: a fork's trace has its own
// ids, a root linked to its parent run's root, and the same spans live
// and stored, whether its first request was performed again or given.
func TestAForkIsItsOwnTraceLinkedToItsParent(t *testing.T) {
	st := openStore(t)
	l := startLive(t)
	ag := loadAgent(t, "../../testdata/agents/format-native.toml")
	r := shell.NewRunner(st, &shell.Options{Observer: telemetry.NewObserver(l.tp, st, telemetry.Options{OnError: func(err error) { t.Error(err) }})})
	ctx := context.Background()
	parent, err := r.Start(ctx, ag, "add")
	if err != nil {
		t.Fatal(err)
	}
	parentSpans := l.spans(t)
	for _, res := range []core.Result{nil, core.ToolResults{Results: []core.ToolResult{{CallID: "a1", Output: "41"}}}} {
		before := len(l.spans(t))
		fork, err := r.Fork(ctx, ag, parent.RunID, 2, res)
		if err != nil || fork.Status != store.StatusCompleted {
			t.Fatalf("fork: %+v %v", fork, err)
		}
		live := l.spans(t)[before:]
		storedSpans := stored(t, st, fork.RunID, false)
		sameTrace(t, live, storedSpans)
		root := storedSpans[0]
		if root.TraceID == parentSpans[0].TraceID || len(root.Links) != 1 || root.Links[0] != parentSpans[0].TraceID+"/"+telemetry.RunSpanID(parent.RunID).String() ||
			root.Attributes["stepwise.run.parent_id"] != parent.RunID {
			t.Errorf("the fork's root: %+v", root)
		}
	}
}
