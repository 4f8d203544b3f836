package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
)

// cancelAgents writes the agents the cancel tests drive, next to the
// usual ones: "sleepy", whose model takes 2 s to answer; "flaky", whose
// model (an OpenAI endpoint) answers 503 for ever, retried every 300 ms
// within the call; "stally", the same endpoint with no retry, so the run
// stalls and a worker tries it again when its retry time comes.
func cancelAgents(t *testing.T, modelURL string) string {
	t.Helper()
	dir := agentsDir(t)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sleepy.jsonl", `{"text": "finally", "delay_ms": 2000}`+"\n")
	write("sleepy.toml", `name = "sleepy"
[models.primary]
provider = "script"
script = "sleepy.jsonl"
`)
	for _, a := range []struct{ name, retry string }{
		{"flaky", `{ attempts = 1000, backoff = "300ms", max_backoff = "300ms", max_elapsed = "10m", jitter = 0 }`},
		{"stally", `{ attempts = 1 }`},
	} {
		write(a.name+".toml", fmt.Sprintf(`name = %q
[models.primary]
provider = "openai"
model = "m"
base_url = "%s/v1"
api_key_env = "STEPWISE_CANCEL_TEST_KEY"
stream = false
retry = %s
`, a.name, modelURL, a.retry))
	}
	return dir
}

// cancelStores are the stores serve's cancellation is tested on: a SQLite
// file, and a PostgreSQL schema (skipped, saying so, where no server
// answers; failed when STEPWISE_REQUIRE_POSTGRES=1).
var cancelStores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store { return openSQLiteAt(t, filepath.Join(t.TempDir(), "serve.db")) }},
	{"postgres", func(t *testing.T) store.Store {
		st, err := postgres.Open(context.Background(), pgtest.SchemaURL(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// TestCancelEndsARunServeDrives: a run a serve worker drives, cancelled
// (POST /v1/runs/{id}/cancel) in the middle of a 2 s model call, during
// the retry waits of a model that answers 503, and while a stalled run
// is retried, ends cancelled within a second, answered 200 with the
// cancelled run, and stays cancelled: never interrupted, never driven
// again. Five times each, on SQLite and on PostgreSQL.
func TestCancelEndsARunServeDrives(t *testing.T) {
	t.Setenv("STEPWISE_CANCEL_TEST_KEY", "sk-test")
	for _, sc := range cancelStores {
		t.Run(sc.name, func(t *testing.T) {
			model := modeltest.New(t, modeltest.Reply{Status: http.StatusServiceUnavailable, Body: `{"error":{"message":"busy"}}`})
			f := newFixture(t, Config{Workers: 2, Store: sc.open(t), AgentsDir: cancelAgents(t, model.URL)})
			for _, c := range []struct {
				agent string
				// inFlight waits until the run is where the cancel is to land.
				inFlight func(id string, before int)
			}{
				{"sleepy", func(id string, _ int) {
					f.waitUntil(id, "its model call started", func(r apiRun) bool { return r.Steps >= 1 && r.Holder != nil })
					time.Sleep(300 * time.Millisecond) // well inside the 2 s call
				}},
				{"flaky", func(id string, before int) {
					// Two attempts made: the call is in a retry wait, or a retry.
					f.waitUntil(id, "its model call retried", func(apiRun) bool { return len(model.Requests()) >= before+2 })
				}},
				{"stally", func(id string, before int) {
					// Stalled once and tried again by a worker (stalled runs
					// are retried as their retry time comes): the cancel lands
					// during a retry, or between two. (Should the first retry
					// come later than 3 s, it lands on the stalled run.)
					f.waitUntil(id, "stalled", func(apiRun) bool { return len(model.Requests()) >= before+1 })
					stalledAt := time.Now()
					f.waitUntil(id, "its stall retried", func(apiRun) bool {
						return len(model.Requests()) >= before+2 || time.Since(stalledAt) > 3*time.Second
					})
				}},
			} {
				for i := range 5 {
					before := len(model.Requests())
					var run apiRun
					r := f.do("POST", "/v1/runs", map[string]any{"agent": c.agent, "input": "go"})
					want(t, r, http.StatusCreated)
					r.json(t, &run)
					c.inFlight(run.ID, before)
					t0 := time.Now()
					r = f.do("POST", "/v1/runs/"+run.ID+"/cancel", map[string]string{"reason": "stop now"})
					took := time.Since(t0)
					var got apiRun
					r.json(t, &got)
					if r.status != http.StatusOK || got.Status != "cancelled" || got.Failure == nil || !strings.Contains(got.Failure.Reason, "stop now") {
						t.Fatalf("%s #%d: cancel answered %d: %s", c.agent, i, r.status, r.body)
					}
					if took > time.Second {
						t.Errorf("%s #%d: the cancel took %s", c.agent, i, took)
					}
					calls := len(model.Requests())
					time.Sleep(400 * time.Millisecond) // past a retry wait: nothing drives it now
					f.do("GET", "/v1/runs/"+run.ID, nil).json(t, &got)
					if got.Status != "cancelled" || got.StoredStatus != "" || got.Holder != nil || got.CancelRequested != "" {
						t.Fatalf("%s #%d: after the cancel: %+v", c.agent, i, got)
					}
					if n := len(model.Requests()); c.agent != "sleepy" && n != calls {
						t.Errorf("%s #%d: the model was called %d more times after the cancel", c.agent, i, n-calls)
					}
				}
			}
			// The sleepy model's calls would have answered by now: every run
			// stays cancelled.
			time.Sleep(2 * time.Second)
			var list struct{ Runs []apiRun }
			f.do("GET", "/v1/runs?limit=100", nil).json(t, &list)
			n := 0
			for _, r := range list.Runs {
				if r.Agent == "sleepy" || r.Agent == "flaky" || r.Agent == "stally" {
					n++
					if r.Status != "cancelled" {
						t.Errorf("run %s (%s) is %s", r.ID, r.Agent, r.Status)
					}
				}
			}
			if n != 15 {
				t.Errorf("%d runs listed, want 15", n)
			}
		})
	}
}

// TestCancelAtOnceWithNoDriver: a stalled run no worker drives (its retry
// time far off) and a paused run are cancelled at once.
func TestCancelAtOnceWithNoDriver(t *testing.T) {
	t.Setenv("STEPWISE_CANCEL_TEST_KEY", "sk-test")
	model := modeltest.New(t, modeltest.Reply{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "3600"}, Body: `{"error":{"message":"slow down"}}`})
	f := newFixture(t, Config{Workers: 1, AgentsDir: cancelAgents(t, model.URL)})
	var stalled, paused apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "stally", "input": "go"}).json(t, &stalled)
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "go"}).json(t, &paused)
	f.waitFor(stalled.ID, "stalled")
	f.waitFor(paused.ID, "awaiting_tool_results")
	for _, id := range []string{stalled.ID, paused.ID} {
		t0 := time.Now()
		r := f.do("POST", "/v1/runs/"+id+"/cancel", nil)
		var got apiRun
		r.json(t, &got)
		if r.status != http.StatusOK || got.Status != "cancelled" || time.Since(t0) > time.Second {
			t.Fatalf("cancel %s: %d in %s: %s", id, r.status, time.Since(t0), r.body)
		}
	}
}

// waitUntil polls the run until ok holds (10 s at most).
func (f *fixture) waitUntil(id, what string, ok func(apiRun) bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var run apiRun
		f.do("GET", "/v1/runs/"+id, nil).json(f.t, &run)
		if ok(run) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s: not %s: %+v", id, what, run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
