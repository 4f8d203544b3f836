package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// TestIdempotencyKeyCreatesOneRun: POST /v1/runs retried with its
// Idempotency-Key gets the first run (replayed), racing retries create one
// run between them, and the key with another body is refused.
func TestIdempotencyKeyCreatesOneRun(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	body := map[string]any{"agent": "quick", "input": "hi", "options": map[string]string{"wait": "5s"}}
	var first, again apiRun
	r := f.do("POST", "/v1/runs", body, "Idempotency-Key", "order-1")
	want(t, r, http.StatusCreated)
	r.json(t, &first)
	r = f.do("POST", "/v1/runs", body, "Idempotency-Key", "order-1")
	want(t, r, http.StatusCreated)
	r.json(t, &again)
	if again.ID != first.ID || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a retry got run %s (replayed %q), the first %s", again.ID, r.header.Get("Idempotent-Replayed"), first.ID)
	}
	if r := f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "other"}, "Idempotency-Key", "order-1"); r.status != http.StatusUnprocessableEntity || r.code(t) != codeIdempotencyMismatch {
		t.Fatalf("the key with another body: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/v1/runs", body, "Idempotency-Key", "bad key"); r.status != http.StatusBadRequest {
		t.Fatalf("a key with a space: %d %s", r.status, r.body)
	}

	var wg sync.WaitGroup
	ids := sync.Map{}
	var created, busy atomic.Int32
	for range 8 {
		wg.Go(func() {
			r := f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "race"}, "Idempotency-Key", "order-2")
			switch r.status {
			case http.StatusCreated:
				var run apiRun
				r.json(t, &run)
				ids.Store(run.ID, true)
				created.Add(1)
			case http.StatusConflict:
				if r.code(t) != codeInProgress || r.header.Get("Retry-After") == "" {
					t.Errorf("a racing retry: %s", r.body)
				}
				busy.Add(1)
			default:
				t.Errorf("a racing retry: %d %s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	n := 0
	ids.Range(func(_, _ any) bool { n++; return true })
	if n != 1 || created.Load() == 0 {
		t.Fatalf("racing retries created %d runs (%d answered 201, %d in progress)", n, created.Load(), busy.Load())
	}
	if c := runCount(t, f); c != 2 {
		t.Fatalf("%d runs, want 2", c)
	}
}

// TestIdempotencyKeyAnswersOnce: results retried with their key get the
// first answer's outcome, not already_answered.
func TestIdempotencyKeyAnswersOnce(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	var paused apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &paused)
	approve := `[{"tool_call_id": "call_approve", "result": "approved"}]`
	first := f.do("POST", "/v1/runs/"+paused.ID+"/results", approve, "Idempotency-Key", "approve-1")
	want(t, first, http.StatusOK)
	again := f.do("POST", "/v1/runs/"+paused.ID+"/results", approve, "Idempotency-Key", "approve-1")
	if again.status != http.StatusOK || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry: %d %s", again.status, again.body)
	}
	// Without the key the retry is refused: already answered, or busy
	// while a worker still holds the run it goes on with.
	if r := f.do("POST", "/v1/runs/"+paused.ID+"/results", approve); r.status != http.StatusConflict ||
		(r.code(t) != codeAlreadyAnswered && r.code(t) != codeBusy) || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("without the key: %d %s", r.status, r.body)
	}
}

// TestIdempotencyKeyAfterACrash: a key claimed by a request that died
// (its server crashed) is in progress for a while; then, if the run it was
// creating exists, a retry gets that run; if not, the retry creates it
// under the id the first drew.
func TestIdempotencyKeyAfterACrash(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), &sqlite.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{Workers: 1, Store: st})
	ctx := context.Background()
	body := `{"agent": "quick", "input": "hi"}`
	h := sha256.Sum256([]byte(body))
	sum := hex.EncodeToString(h[:])

	// The first request drew its run id, claimed the key and died before
	// it created the run.
	lost := "r20260101-000000-aaaaaaaaaaaaaaaaaaaaaaaaaa"
	if _, claimed, err := st.ClaimKey(ctx, store.IdempotencyKey{Scope: "POST /v1/runs", Key: "k-lost", Digest: sum, Ref: lost}, claimGrace); err != nil || !claimed {
		t.Fatal(err)
	}
	if r := f.do("POST", "/v1/runs", body, "Idempotency-Key", "k-lost"); r.status != http.StatusConflict || r.code(t) != codeInProgress {
		t.Fatalf("a fresh claim: %d %s", r.status, r.body)
	}
	now.Add(int64(time.Minute))
	var run apiRun
	r := f.do("POST", "/v1/runs", body, "Idempotency-Key", "k-lost")
	want(t, r, http.StatusCreated)
	r.json(t, &run)
	if run.ID != lost {
		t.Fatalf("the retry created %s, not the drawn id %s", run.ID, lost)
	}

	// The first request created its run and died before it answered.
	made := "r20260101-000000-bbbbbbbbbbbbbbbbbbbbbbbbbb"
	if _, claimed, err := st.ClaimKey(ctx, store.IdempotencyKey{Scope: "POST /v1/runs", Key: "k-made", Digest: sum, Ref: made}, claimGrace); err != nil || !claimed {
		t.Fatal(err)
	}
	ag, _, err := f.srv.agents.byName("quick")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.runnerFor(made).Pool().Create(ctx, ag, "hi"); err != nil {
		t.Fatal(err)
	}
	r = f.do("POST", "/v1/runs", body, "Idempotency-Key", "k-made")
	want(t, r, http.StatusCreated)
	r.json(t, &run)
	if run.ID != made {
		t.Fatalf("the retry got %s, not the run the first created, %s", run.ID, made)
	}
	if c := runCount(t, f); c != 2 {
		t.Fatalf("%d runs, want 2", c)
	}
}
