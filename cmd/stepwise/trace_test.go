package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/internal/otlptest"
	"github.com/stepwise-agent/stepwise/shell/telemetry"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected traces under testdata/traces")

// inproc runs the CLI in this process, with vars over the process's
// environment.
func inproc(t *testing.T, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return os.Getenv(k)
	}}
	code := e.main(args)
	return result{code, out.String(), errb.String()}
}

// otlpJSON is the part of an OTLP/JSON request the tests read.
type otlpJSON struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []struct {
				TraceID    string `json:"traceId"`
				SpanID     string `json:"spanId"`
				Parent     string `json:"parentSpanId"`
				Name       string `json:"name"`
				Attributes []struct {
					Key   string         `json:"key"`
					Value map[string]any `json:"value"`
				} `json:"attributes"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

// TestTraceOfRecordedRuns: each recorded run gives the same bytes every
// time, the bytes in testdata/traces (rewritten with -rewrite), a trace a
// receiver decodes, with one root (the run) and every other span its
// child, tool call ids on every execute_tool span, and usage.
func TestTraceOfRecordedRuns(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/runs/*.json")
	db := filepath.Join(t.TempDir(), "runs.db")
	vars := map[string]string{"STEPWISE_DB": db}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			imp := inproc(t, vars, "", "import", f)
			want(t, imp, 0)
			id := strings.TrimSpace(imp.stdout)
			first := inproc(t, vars, "", "trace", id)
			want(t, first, 0)
			if again := inproc(t, vars, "", "trace", id); again.stdout != first.stdout {
				t.Fatal("two traces of the run differ")
			}
			golden := filepath.Join("../../testdata/traces", name+".json")
			if *rewrite {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				os.WriteFile(golden, []byte(first.stdout), 0o644)
			}
			if w, err := os.ReadFile(golden); err != nil || string(w) != first.stdout {
				t.Fatalf("the trace differs from %s (go test -run TestTraceOfRecordedRuns -rewrite):\n%s", golden, first.stdout)
			}
			rcv := otlptest.Start(t)
			resp, err := http.Post(rcv.URL+"/v1/traces", "application/json", strings.NewReader(first.stdout))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the receiver refused the trace: %v %v", resp, err)
			}
			spans := rcv.Spans()
			if len(spans) < 3 || spans[0].Parent != "" || !strings.HasPrefix(spans[0].Name, "invoke_agent ") {
				t.Fatalf("the trace does not start with the run's span: %+v", spans)
			}
			if spans[0].TraceID != telemetry.TraceID(id).String() || spans[0].Attributes["gen_ai.conversation.id"] != id {
				t.Fatalf("the run's span: %+v", spans[0])
			}
			for _, s := range spans[1:] {
				if s.TraceID != spans[0].TraceID || s.Parent != spans[0].SpanID {
					t.Errorf("span %q is not the run's child", s.Name)
				}
				op := s.Attributes["gen_ai.operation.name"]
				if !slices.Contains([]string{"chat", "execute_tool", "retrieval"}, op) || !strings.HasPrefix(s.Name, op+" ") {
					t.Errorf("span %q: operation %q", s.Name, op)
				}
				if op == "execute_tool" && (s.Attributes["gen_ai.tool.call.id"] == "" || s.Attributes["gen_ai.tool.name"] == "") {
					t.Errorf("span %q has no tool call id or name: %v", s.Name, s.Attributes)
				}
				if op == "chat" && s.Attributes["gen_ai.provider.name"] == "" {
					t.Errorf("span %q has no provider", s.Name)
				}
				if s.Start > s.End || s.Start < spans[0].Start || s.End > spans[0].End {
					t.Errorf("span %q runs outside the run", s.Name)
				}
			}
			if name == "external-usage" {
				for i, w := range [][2]string{{"520", "54"}, {"120", "18"}, {"", ""}, {"180", "22"}, {"", ""}, {"220", "14"}} {
					if spans[i].Attributes["gen_ai.usage.input_tokens"] != w[0] || spans[i].Attributes["gen_ai.usage.output_tokens"] != w[1] {
						t.Errorf("span %d %q: usage %v, want %v", i, spans[i].Name, spans[i].Attributes, w)
					}
				}
				if spans[4].Attributes["gen_ai.tool.call.id"] != "call_approve" || spans[4].Attributes["gen_ai.tool.type"] != "function" {
					t.Errorf("the external call's span: %v", spans[4].Attributes)
				}
			}
		})
	}
}

// TestTraceSendIsTheJSON: --send delivers over OTLP/HTTP protobuf what
// the JSON says, times included, and prints the trace id; without an
// endpoint, or with a protocol it does not speak, it says why.
func TestTraceSendIsTheJSON(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	vars := map[string]string{"STEPWISE_DB": db}
	imp := inproc(t, vars, "", "import", "../../testdata/runs/external-two-pauses.json")
	want(t, imp, 0)
	id := strings.TrimSpace(imp.stdout)

	t.Setenv(telemetry.EnvEndpoint, "")
	r := inproc(t, vars, "", "trace", id, "--send")
	if r.code != exitUsage || !strings.Contains(r.stderr, "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Fatalf("--send without an endpoint: %+v", r)
	}
	rcv := otlptest.Start(t)
	t.Setenv(telemetry.EnvEndpoint, rcv.URL)
	t.Setenv(telemetry.EnvProtocol, "grpc")
	r = inproc(t, vars, "", "trace", id, "--send")
	if r.code != exitUsage || !strings.Contains(r.stderr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") {
		t.Fatalf("--send over grpc: %+v", r)
	}
	t.Setenv(telemetry.EnvProtocol, "http/protobuf")
	r = inproc(t, vars, "", "trace", id, "--send", "--content")
	want(t, r, 0)
	if strings.TrimSpace(r.stdout) != telemetry.TraceID(id).String() {
		t.Fatalf("--send printed %q", r.stdout)
	}
	if ct := rcv.ContentTypes(); !slices.Equal(ct, []string{"application/x-protobuf"}) {
		t.Fatalf("sent as %v", ct)
	}
	sent := rcv.Spans()

	j := inproc(t, vars, "", "trace", id, "--content")
	want(t, j, 0)
	rcvJSON := otlptest.Start(t)
	if resp, err := http.Post(rcvJSON.URL+"/v1/traces", "application/json", strings.NewReader(j.stdout)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the JSON: %v %v", resp, err)
	}
	fromJSON := rcvJSON.Spans()
	if len(sent) != len(fromJSON) || len(sent) == 0 {
		t.Fatalf("sent %d spans, the JSON has %d", len(sent), len(fromJSON))
	}
	for i := range sent {
		s, w := sent[i], fromJSON[i]
		s.Resource, w.Resource = nil, nil
		if !equalSpans(s, w) {
			t.Errorf("span %d:\nsent %+v\njson %+v", i, s, w)
		}
	}
	if sent[0].Resource["service.name"] != "stepwise" || fromJSON[0].Resource["service.name"] != "stepwise" {
		t.Errorf("resources: %v, %v", sent[0].Resource, fromJSON[0].Resource)
	}
	if sent[1].Attributes["gen_ai.input.messages"] == "" {
		t.Errorf("--content sent no messages: %v", sent[1].Attributes)
	}
}

func equalSpans(a, b otlptest.Span) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return bytes.Equal(aj, bj)
}

// TestRunAndResumeTraceLive: with an OTLP endpoint set, run and resume
// send the run's spans as they happen, and they are the spans `stepwise
// trace` gives the stored run; content only when the environment asks.
func TestRunAndResumeTraceLive(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	vars := map[string]string{"STEPWISE_DB": db, "NO_COLOR": "1"}
	rcv := otlptest.Start(t)
	t.Setenv(telemetry.EnvEndpoint, rcv.URL)
	r := inproc(t, vars, "", "run", "../../testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	o := decodeOutcome(t, r)
	if n := len(rcv.Spans()); n != 3 { // two chat spans and read_file; the approval is pending
		t.Fatalf("after the pause the receiver has %d spans: %+v", n, rcv.Spans())
	}
	r = inproc(t, vars, "", "resume", o.RunID, "--results", "../../testdata/results/approve.json", "--json")
	want(t, r, 0)
	live := rcv.Spans()

	tr := inproc(t, vars, "", "trace", o.RunID)
	want(t, tr, 0)
	rcvJSON := otlptest.Start(t)
	if resp, err := http.Post(rcvJSON.URL+"/v1/traces", "application/json", strings.NewReader(tr.stdout)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the JSON: %v %v", resp, err)
	}
	stored := rcvJSON.Spans()
	if len(live) != len(stored) || len(live) != 6 {
		t.Fatalf("%d live spans, %d stored", len(live), len(stored))
	}
	byID := map[string]otlptest.Span{}
	for _, s := range live {
		byID[s.SpanID] = s
		for k := range s.Attributes {
			if strings.HasPrefix(k, "gen_ai.input") || strings.HasPrefix(k, "gen_ai.output") {
				t.Errorf("content recorded without being asked for: %s", k)
			}
		}
	}
	for _, w := range stored {
		g, ok := byID[w.SpanID]
		if !ok {
			t.Errorf("no live span %q", w.Name)
			continue
		}
		g.Start, g.End, w.Start, w.End, g.Resource, w.Resource = 0, 0, 0, 0, nil, nil
		if !equalSpans(g, w) {
			t.Errorf("live %+v\nstored %+v", g, w)
		}
	}
}

// TestAnUnsupportedExporterIsAUsageError: the environment asking for
// traces in a way stepwise cannot send them stops the run before it
// starts.
func TestAnUnsupportedExporterIsAUsageError(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	t.Setenv(telemetry.EnvEndpoint, "http://127.0.0.1:1")
	r := inproc(t, map[string]string{"STEPWISE_DB": db, telemetry.EnvTracesProtocol: "http/json"}, "", "run", "../../testdata/agents/analyst.toml", "cost?")
	if r.code != exitUsage || !strings.Contains(r.stderr, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json") {
		t.Fatalf("%+v", r)
	}
	r = inproc(t, map[string]string{"STEPWISE_DB": db, telemetry.EnvSDKDisabled: "true", telemetry.EnvTracesProtocol: "http/json"}, "", "run", "../../testdata/agents/analyst.toml", "cost?", "--quiet")
	want(t, r, 0)
}

// TestTraceFollowsAChangedAgent: a run that stalled on a dead endpoint and
// was resumed with a fixed agent file traces its model call against the
// endpoint that answered it, live and from the store alike.
func TestTraceFollowsAChangedAgent(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TRUTH_KEY", "sk-truth-0123456789")
	srv, _ := openAIServer(t, 0, 200, "", "fixed")
	dead := openAIAgent(t, dir, "dead.toml", "http://127.0.0.1:1/v1")
	fixed := openAIAgent(t, dir, "fixed.toml", srv.URL+"/v1")
	vars := map[string]string{"STEPWISE_DB": filepath.Join(dir, "t.db")}
	rcv := otlptest.Start(t)
	t.Setenv(telemetry.EnvEndpoint, rcv.URL)
	r := inproc(t, vars, "", "run", dead, "hello", "--json")
	want(t, r, exitStalled)
	o := decodeOutcome(t, r)
	want(t, inproc(t, vars, "", "resume", o.RunID, "--agent", fixed, "--json"), 0)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	tr := inproc(t, vars, "", "trace", o.RunID)
	want(t, tr, 0)
	var doc otlpJSON
	if err := json.Unmarshal([]byte(tr.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	spans := doc.ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 2 || spans[1].Name != "chat m" {
		t.Fatalf("spans: %+v", spans)
	}
	var stored any
	for _, a := range spans[1].Attributes {
		if a.Key == "server.port" {
			stored = a.Value["intValue"]
		}
	}
	if stored != port {
		t.Errorf("the stored trace's model call went to port %v, want %s", stored, port)
	}
	live := rcv.Spans()
	if len(live) != 2 || live[0].Attributes["server.port"] != port || live[0].Attributes["server.address"] != "127.0.0.1" {
		t.Errorf("the live model call: %+v", live)
	}
}
