package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/otlptest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/telemetry"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// TestServedRunsAreTraced: a server whose runner has a tracing observer
// traces the runs its workers drive, the answer to a pause given over
// HTTP included, with the spans `stepwise trace` gives the stored run.
func TestServedRunsAreTraced(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv(telemetry.EnvEndpoint, rcv.URL)
	tp, err := telemetry.ProviderFromEnv(context.Background(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "serve.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	obs := telemetry.NewObserver(tp, st, telemetry.Options{OnError: func(err error) { t.Error(err) }})
	s, err := New(Config{Store: st, AgentsDir: agentsDir(t), Workers: 2, Runner: shell.Options{Observer: obs}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	hs := httptest.NewServer(s.Handler())
	defer func() { hs.Close(); s.Shutdown() }()
	f := &fixture{t: t, srv: s, url: hs.URL}

	r := f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp", "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	want(t, f.do("POST", "/v1/runs/"+run.ID+"/results", `[{"tool_call_id": "call_approve", "result": "approved"}]`), http.StatusOK)
	f.waitFor(run.ID, "completed")
	// The run's span ends with its drive, just after the step that
	// completed it was stored (which waitFor saw): flush until it is in.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(rcv.Spans()) >= 4 || time.Now().After(deadline) {
			break
		}
	}
	live := map[string]otlptest.Span{}
	for _, sp := range rcv.Spans() {
		live[sp.SpanID] = sp
	}

	stored, err := telemetry.ReadRun(context.Background(), st, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := telemetry.WriteJSON(&buf, nil, stored.Spans(false)); err != nil {
		t.Fatal(err)
	}
	rcvJSON := otlptest.Start(t)
	if resp, err := http.Post(rcvJSON.URL+"/v1/traces", "application/json", &buf); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the stored trace: %v %v", resp, err)
	}
	wantSpans := rcvJSON.Spans()
	if len(wantSpans) != 4 || len(live) != len(wantSpans) {
		t.Fatalf("%d spans live, %d stored (want 4: the run, two chats, the approval)", len(live), len(wantSpans))
	}
	for _, w := range wantSpans {
		g, ok := live[w.SpanID]
		if !ok || g.Name != w.Name || g.Parent != w.Parent || g.TraceID != w.TraceID || len(g.Attributes) != len(w.Attributes) {
			t.Errorf("stored %+v\nlive   %+v", w, g)
		}
		for k, v := range w.Attributes {
			if g.Attributes[k] != v {
				t.Errorf("span %q: %s live %q, stored %q", w.Name, k, g.Attributes[k], v)
			}
		}
	}
}
