package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// TestStalledRunShowsAttemptsReasonAndRetry: GET /v1/runs/{id} of a
// stalled run gives its reason, its stall count (stall_attempts) and its
// next try (retry_at); the inspector's script shows them, not "live".
func TestStalledRunShowsAttemptsReasonAndRetry(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp", "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	ctx := context.Background()
	st := f.srv.cfg.Store
	l := acquireReleased(t, st, run.ID, store.LeaseRequest{Owner: "test/1/x", TTL: time.Minute})
	retry := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if err := st.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "the store is unavailable: checkpoint step 3 failed for 30s",
		RetryAt: retry, StallAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	got := f.waitFor(run.ID, "stalled")
	if got.StallAttempts != 3 || !strings.Contains(got.Reason, "store is unavailable") || got.RetryAt != stamp(retry) {
		t.Fatalf("stalled run: %+v", got)
	}
	raw := f.do("GET", "/v1/runs/"+run.ID, nil)
	if !strings.Contains(string(raw.body), `"stall_attempts":3`) {
		t.Fatalf("the JSON lacks stall_attempts: %s", raw.body)
	}
	// The listing shows it too.
	list := f.do("GET", "/v1/runs", nil)
	if !strings.Contains(string(list.body), `"stall_attempts":3`) {
		t.Fatalf("the list lacks stall_attempts: %s", list.body)
	}
	// The inspector shows a stalled run as stalled, with its count and
	// next try, never as live.
	js := f.do("GET", "/ui/run.js", nil)
	for _, s := range []string{"r.status === 'stalled'", "setLive('stalled', stalledLabel)", "stall_attempts", "next try"} {
		if !strings.Contains(string(js.body), s) {
			t.Errorf("run.js lacks %q", s)
		}
	}
}

// stallRun marks the run stalled for the third time in a row, its next try
// an hour away (so no worker claims it), as a store outage would leave it.
func stallRun(t *testing.T, f *fixture, id string) string {
	t.Helper()
	ctx := context.Background()
	st := f.srv.cfg.Store
	l := acquireReleased(t, st, id, store.LeaseRequest{Owner: "test/1/x", TTL: time.Minute})
	if err := st.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "the store is unavailable: checkpoint step 3 failed for 30s",
		RetryAt: time.Now().Add(time.Hour), StallAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	return id
}

// acquireReleased takes the lease of a run that paused or ended: the
// server answers once the run left running, and its worker lets the lease
// go just after, so a take that finds it still held tries again.
func acquireReleased(t *testing.T, st store.Store, id string, req store.LeaseRequest) store.Lease {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := st.Acquire(context.Background(), id, req)
		if err == nil {
			return l
		}
		if !errors.Is(err, store.ErrBusy) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeBacksOffAStalledRun: a run whose model stays down stalls, and
// the server does not retry it at once (the fixed ~7.5 s cycle of issue
// 24): its next try is ~5 s away, nothing calls the model before it, and
// the second stall waits ~10 s, its count kept with the run.
func TestServeBacksOffAStalledRun(t *testing.T) {
	model := modeltest.New(t, modeltest.Reply{Status: http.StatusServiceUnavailable, Body: `{"error":{"message":"overloaded"}}`})
	dir := agentsDir(t)
	agent := fmt.Sprintf("name = \"down\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"%s/v1\"\nretry = { attempts = 1 }\n", model.URL)
	if err := os.WriteFile(filepath.Join(dir, "down.toml"), []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{Workers: 2, AgentsDir: dir})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "down", "input": "hi"})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	within := func(got apiRun, n int, nominal time.Duration) {
		t.Helper()
		retry, err := time.Parse(time.RFC3339Nano, got.RetryAt)
		if err != nil {
			t.Fatalf("retry_at %q: %v", got.RetryAt, err)
		}
		updated, _ := time.Parse(time.RFC3339Nano, got.Updated)
		wait := retry.Sub(updated)
		if got.StallAttempts != n || wait < time.Duration(float64(nominal)*0.8)-100*time.Millisecond || wait > time.Duration(float64(nominal)*1.2)+100*time.Millisecond ||
			!strings.Contains(got.Reason, "unavailable") {
			t.Fatalf("stall %d: %d attempts, next try %s after it (want %s ±20%%), reason %q", n, got.StallAttempts, wait, nominal, got.Reason)
		}
	}
	first := f.waitFor(run.ID, "stalled")
	within(first, 1, 5*time.Second)
	calls := len(model.Requests())
	time.Sleep(3 * time.Second)
	if now := len(model.Requests()); now != calls {
		t.Fatalf("the model was called %d more times within 3 s of the stall", now-calls)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got apiRun
		f.do("GET", "/v1/runs/"+run.ID, nil).json(t, &got)
		if got.Status == "stalled" && got.StallAttempts == 2 {
			within(got, 2, 10*time.Second)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second stall: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCorruptRunIsStalled: a runnable run whose stored record the store
// finds corrupt (here its agent's config, stored once by digest, lost) is
// stalled by the worker that claims it, with why, and not claimed again at
// once, which would spin a worker on a run none can drive.
func TestCorruptRunIsStalled(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	st := f.srv.cfg.Store
	ctx := context.Background()
	config := []byte(`{"name": "big", "system_prompt": "` + strings.Repeat("be brief. ", 80) + `"}`)
	l, err := st.CreateRun(ctx, store.NewRun{ID: "r1", Agent: "big", ConfigHash: "h", Config: config, Input: "q",
		Initial: storetest.BaseState("q", []core.Message{{Role: core.RoleUser, Content: "q"}}), Owner: "test/1/x", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", st.(*sqlite.SQLite).Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(`DELETE FROM blobs`); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("the config was not stored by digest")
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	f.srv.poke()
	deadline := time.Now().Add(10 * time.Second)
	var got store.RunInfo
	for {
		runs, err := st.ListRuns(ctx, store.Filter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 && runs[0].Status == store.StatusStalled {
			got = runs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the corrupt run is not stalled: %+v", runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(got.Reason, "unreadable") || !strings.Contains(got.Reason, "config") || got.Lease.Owner != "" ||
		got.RetryAt.Before(time.Now().Add(9*time.Minute)) {
		t.Fatalf("stalled run: reason %q, lease %+v, retry %v", got.Reason, got.Lease, got.RetryAt)
	}
	if _, err := st.Claim(ctx, store.LeaseRequest{Owner: "test/1/y", TTL: time.Minute}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the stalled run is claimable at once: %v", err)
	}
	if _, err := st.Run(ctx, "r1"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("reading the run: %v", err)
	}
}
