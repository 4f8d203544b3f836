package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// testIdempotency: a key is claimed once (racing claimers from two stores
// on the database: exactly one wins, the others read its claim with its
// ref); its response, once settled, reads back whole; a dropped key can be
// claimed again; keys are scoped; a key older than IdempotencyTTL is
// forgotten.
func testIdempotency(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	other := reopen(t, h, s, clock.Now)
	stores := []store.Idempotency{}
	for _, st := range []store.Store{s, other} {
		i, ok := st.(store.Idempotency)
		if !ok {
			t.Fatalf("the store (%T) does not implement store.Idempotency", st)
		}
		stores = append(stores, i)
	}
	k := store.IdempotencyKey{Scope: "POST /v1/runs", Key: "retry-me", Digest: "d1", Ref: "r-1"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := k
			if i > 0 {
				mine.Ref = "r-other"
			}
			rec, claimed, err := stores[i%2].ClaimKey(ctx, mine, time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if claimed {
				won++
			}
			if rec.Digest != "d1" || rec.Status != 0 || rec.Body != nil {
				t.Errorf("claim %d read %+v", i, rec)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d claimers won the key, want 1", won)
	}
	must(t, stores[0].SettleKey(ctx, k.Scope, k.Key, 201, []byte(`{"id":"r-1"}`)))
	rec, claimed, err := stores[1].ClaimKey(ctx, store.IdempotencyKey{Scope: k.Scope, Key: k.Key, Digest: "d2", Ref: "r-2"}, time.Hour)
	must(t, err)
	if claimed || rec.Status != 201 || string(rec.Body) != `{"id":"r-1"}` || rec.Digest != "d1" || rec.Created.IsZero() {
		t.Fatalf("a settled key read back %+v (claimed %v)", rec, claimed)
	}
	if rec.Ref != "r-1" && rec.Ref != "r-other" {
		t.Fatalf("ref %q", rec.Ref)
	}
	if _, claimed, _ := stores[0].ClaimKey(ctx, store.IdempotencyKey{Scope: "POST /v1/runs/x/results", Key: k.Key, Digest: "d3"}, time.Hour); !claimed {
		t.Fatal("a key in another scope was not its own")
	}
	if err := stores[0].SettleKey(ctx, "nope", "nope", 200, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("settling an unknown key: %v", err)
	}
	must(t, stores[1].DropKey(ctx, k.Scope, k.Key))
	if _, claimed, err := stores[0].ClaimKey(ctx, k, time.Hour); err != nil || !claimed {
		t.Fatalf("a dropped key could not be claimed again: %v", err)
	}
	// An unsettled claim is in progress until it is stale; then one of
	// racing claimers takes it over, keeping its ref; a claim with
	// another digest never does.
	if _, claimed, _ := stores[1].ClaimKey(ctx, store.IdempotencyKey{Scope: k.Scope, Key: k.Key, Digest: "d1", Ref: "r-new"}, time.Minute); claimed {
		t.Fatal("a fresh claim was taken over")
	}
	clock.Add(2 * time.Minute)
	if _, claimed, _ := stores[1].ClaimKey(ctx, store.IdempotencyKey{Scope: k.Scope, Key: k.Key, Digest: "other", Ref: "r-new"}, time.Minute); claimed {
		t.Fatal("a stale claim was taken over by another body")
	}
	won = 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, claimed, err := stores[i%2].ClaimKey(ctx, store.IdempotencyKey{Scope: k.Scope, Key: k.Key, Digest: "d1", Ref: "r-new"}, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if claimed {
				won++
				if rec.Ref != "r-1" {
					t.Errorf("a take-over got ref %q, want the first claim's r-1", rec.Ref)
				}
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d claimers took the stale claim over, want 1", won)
	}
	clock.Add(store.IdempotencyTTL + time.Minute)
	if rec, claimed, err := stores[1].ClaimKey(ctx, store.IdempotencyKey{Scope: k.Scope, Key: k.Key, Digest: "d9", Ref: "r-9"}, time.Hour); err != nil || !claimed || rec.Ref != "r-9" {
		t.Fatalf("a key past its TTL was remembered: %+v %v %v", rec, claimed, err)
	}
}
