package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// TestTakeOverInTheAPI: POST /cancel and /resume with {"take_over": true}
// take a run from a live holder elsewhere (a lease an hour long that this
// server cannot check), record the take-over with the run, and fence the
// former holder out: its writes are refused.
func TestTakeOverInTheAPI(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	st := f.srv.cfg.Store
	ctx := context.Background()
	held := func() (apiRun, store.Lease) {
		t.Helper()
		var run apiRun
		f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &run)
		if run.Status != "awaiting_tool_results" {
			t.Fatalf("run: %+v", run)
		}
		return run, acquireReleased(t, st, run.ID, store.LeaseRequest{Owner: "elsewhere/1/x", TTL: time.Hour})
	}
	recorded := func(id, by string) {
		t.Helper()
		ri, err := st.Run(ctx, id)
		if err != nil || len(ri.TakeOvers) != 1 || !strings.Contains(ri.TakeOvers[0], "from elsewhere/1/x") || !strings.HasSuffix(ri.TakeOvers[0], by) {
			t.Fatalf("take-overs of %s: %q %v", id, ri.TakeOvers, err)
		}
	}
	fenced := func(l store.Lease) {
		t.Helper()
		if err := st.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("the former holder's write: %v, want ErrLeaseLost", err)
		}
	}

	run, l := held()
	r := f.do("POST", "/v1/runs/"+run.ID+"/cancel", map[string]any{"take_over": true, "reason": "operator"})
	want(t, r, http.StatusOK)
	var cancelled apiRun
	r.json(t, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Fatalf("cancel with take_over: %s", r.body)
	}
	recorded(run.ID, "POST /v1/runs/{id}/cancel with take_over")
	fenced(l)

	run, l = held()
	must(t, st.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted, Reason: "its driver hung"}))
	want(t, f.do("POST", "/v1/runs/"+run.ID+"/resume", map[string]any{"take_over": true}), http.StatusAccepted)
	recorded(run.ID, "POST /v1/runs/{id}/resume with take_over")
	fenced(l)
	if r := f.do("POST", "/v1/runs/"+run.ID+"/resume", map[string]any{"take_over": "yes"}); r.status != http.StatusBadRequest {
		t.Fatalf("take_over not a boolean: %d %s", r.status, r.body)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
