package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
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
	l, err := st.Acquire(ctx, run.ID, store.LeaseRequest{Owner: "test/1/x", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
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
	l, err := st.Acquire(ctx, id, store.LeaseRequest{Owner: "test/1/x", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "the store is unavailable: checkpoint step 3 failed for 30s",
		RetryAt: time.Now().Add(time.Hour), StallAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	return id
}
