package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// testCorruption: a damaged record is reported as ErrCorrupt naming the
// run and step (and the segment, call or tool list), never used, and never
// copied under a fresh checksum; records it does not hold still load. The
// subtests past the first three need Harness.Damage.
func testCorruption(t *testing.T, h Harness) {
	for _, what := range []string{"step", "segment", "intent"} {
		t.Run(what, func(t *testing.T) { corruptByHarness(t, h, what) })
	}
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"StepAnyByte", corruptStep},
		{"Messages", corruptMessages},
		{"SegmentLoads", corruptSegment},
		{"Resealed", corruptResealed},
		{"LastStep", corruptLastStep},
		{"IntentNamed", corruptIntent},
		{"ToolList", corruptToolList},
		{"Blobs", corruptBlobs},
		{"ParallelDecode", corruptParallelDecode},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// corruptByHarness: a byte flipped by Harness.Corrupt in a step, a segment
// or an intent.
func corruptByHarness(t *testing.T, h Harness, what string) {
	ctx := context.Background()
	s := open(t, h, nil)
	l, g := create(t, s, "r", nil)
	for range 70 {
		must(t, s.Checkpoint(ctx, l, g.next()))
	}
	must(t, s.RecordIntent(ctx, l, 5, core.ToolCall{ID: "c5", Name: "search", Args: []byte(`{"q":5}`)}))
	var err error
	switch what {
	case "step":
		h.Corrupt(t, s, "r", "step", 3)
		_, err = s.LoadStep(ctx, "r", 3)
		if _, err2 := s.LoadStep(ctx, "r", 2); err2 != nil {
			t.Fatalf("step 2 should still load: %v", err2)
		}
	case "segment":
		h.Corrupt(t, s, "r", "segment", 0)
		_, err = s.LoadLatest(ctx, "r")
	case "intent":
		h.Corrupt(t, s, "r", "intent", 5)
		_, err = s.Intents(ctx, "r", 5)
	}
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "run r") {
		t.Fatalf("after corrupting a %s: %v", what, err)
	}
	if what == "step" {
		if err := s.Export(ctx, "r", new(bytes.Buffer)); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("export of a corrupt run: %v", err)
		}
	}
}

// corruptStep: whatever byte of a step's row flips, the step, the later
// steps of its segment (which read its messages), Steps past it, StepsFrom
// and Export report it; the steps before it load.
func corruptStep(t *testing.T, h Harness) {
	ctx := context.Background()
	for _, at := range []int{0, 7, 40} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			s := longRun(t, h, 6)
			damage(t, h, s, Damage{Kind: DamageStep, RunID: "r", Seq: 3, At: at})
			_, err := s.LoadStep(ctx, "r", 3)
			wantCorrupt(t, err, "run r step 3", "checksum")
			if _, err := s.LoadStep(ctx, "r", 2); err != nil {
				t.Fatalf("step 2 should still load: %v", err)
			}
			_, err = s.LoadLatest(ctx, "r")
			wantCorrupt(t, err, "run r step 3")
			seen := 0
			err = s.Steps(ctx, "r", func(store.StepRecord) error { seen++; return nil })
			wantCorrupt(t, err, "run r step 3")
			if seen != 3 {
				t.Fatalf("Steps delivered %d steps before the corrupt one, want 3", seen)
			}
			err = s.StepsFrom(ctx, "r", 5, func(store.StepRecord) error { return nil })
			wantCorrupt(t, err, "run r step 3")
			var buf strings.Builder
			wantCorrupt(t, s.Export(ctx, "r", &buf), "run r step 3")
		})
	}
}

// corruptMessages: the steps before the one whose messages are damaged
// load; the later ones name it.
func corruptMessages(t *testing.T, h Harness) {
	ctx := context.Background()
	s := longRun(t, h, 6)
	damage(t, h, s, Damage{Kind: DamageStep, RunID: "r", Seq: 4, At: 11})
	for _, seq := range []int{0, 1, 2, 3} {
		if _, err := s.LoadStep(ctx, "r", seq); err != nil {
			t.Fatalf("step %d does not hold the corrupt message but fails: %v", seq, err)
		}
	}
	_, err := s.LoadStep(ctx, "r", 5)
	wantCorrupt(t, err, "run r step 4")
	_, err = s.LoadLatest(ctx, "r")
	wantCorrupt(t, err, "run r step 4")
	err = s.Steps(ctx, "r", func(store.StepRecord) error { return nil })
	wantCorrupt(t, err, "run r step 4")
}

// corruptSegment: a segment that fails its checksum is reported by the
// loads that read it, and only by them; a corrupt step row is not copied
// into a new segment under a fresh checksum: the checkpoint that would
// copy it (on a store opened afresh, which reads the rows back) refuses,
// writing nothing.
func corruptSegment(t *testing.T, h Harness) {
	ctx := context.Background()
	s := longRun(t, h, 3*codec.SegmentSteps+5)
	if h.Segments != nil {
		if n := h.Segments(t, s, "r"); n != 3 {
			t.Fatalf("%d segments, want 3", n)
		}
	}
	damage(t, h, s, Damage{Kind: DamageSegment, RunID: "r", Seq: 64, At: 10})
	for _, seq := range []int{0, 63, 64, 100, 126} {
		if _, err := s.LoadStep(ctx, "r", seq); err != nil {
			t.Fatalf("step %d does not read the segment of steps 64-127 but fails: %v", seq, err)
		}
	}
	_, err := s.LoadStep(ctx, "r", 127)
	wantCorrupt(t, err, "run r step 127", "segment of steps 64-127")
	_, err = s.LoadLatest(ctx, "r")
	wantCorrupt(t, err, "segment of steps 64-127")
	if err := s.Steps(ctx, "r", func(store.StepRecord) error { return nil }); err != nil {
		t.Fatalf("Steps reads the step rows, which are fine: %v", err)
	}
	err = s.StepsFrom(ctx, "r", 150, func(store.StepRecord) error { return nil })
	wantCorrupt(t, err, "segment of steps 64-127")
	damage(t, h, s, Damage{Kind: DamageStep, RunID: "r", Seq: 195, At: 3})
	s2 := reopen(t, h, s, nil)
	g := newSynth("r", nil)
	for seq := 1; seq < 4*codec.SegmentSteps; seq++ {
		cp := g.next()
		if seq <= 3*codec.SegmentSteps+5 {
			continue
		}
		err = s2.Checkpoint(ctx, leaseOf(t, s2, "r"), cp)
		if seq < 4*codec.SegmentSteps-1 && err != nil {
			t.Fatal(err)
		}
	}
	wantCorrupt(t, err, "run r step 195")
	if info, _ := s2.Run(ctx, "r"); info.LastSeq != 4*codec.SegmentSteps-2 {
		t.Fatalf("the refused checkpoint wrote: last step %d", info.LastSeq)
	}
}

// corruptResealed: a step whose checksum matches bytes that do not decode
// fails with store.ErrCorrupt and core.ErrCorrupt both.
func corruptResealed(t *testing.T, h Harness) {
	ctx := context.Background()
	s := longRun(t, h, 6)
	damage(t, h, s, Damage{Kind: ResealStep, RunID: "r", Seq: 2})
	_, err := s.LoadStep(ctx, "r", 2)
	wantCorrupt(t, err, "run r step 2")
	if !errors.Is(err, core.ErrCorrupt) {
		t.Fatalf("want core.ErrCorrupt too: %v", err)
	}
}

// corruptLastStep: a store that did not write the run's last step (a
// resumed process) reads it back and verifies it before writing on top.
func corruptLastStep(t *testing.T, h Harness) {
	s := longRun(t, h, 6)
	damage(t, h, s, Damage{Kind: DamageStep, RunID: "r", Seq: 6, At: 3})
	fresh := reopen(t, h, s, nil)
	remembers(t, h, fresh, "r", false)
	g := newSynth("r", nil)
	var next store.Checkpoint
	for range 7 {
		next = g.next()
	}
	err := fresh.Checkpoint(context.Background(), leaseOf(t, fresh, "r"), next)
	wantCorrupt(t, err, "run r step 6")
	_, err = fresh.LoadLatest(context.Background(), "r")
	wantCorrupt(t, err, "run r step 6")
}

// corruptIntent: a damaged intent is reported naming its run, step and
// call, by Intents and by Export.
func corruptIntent(t *testing.T, h Harness) {
	s := longRun(t, h, 6)
	ctx := context.Background()
	must(t, s.RecordIntent(ctx, leaseOf(t, s, "r"), 5, core.ToolCall{ID: "c5", Name: "search", Args: []byte(`{"q":1}`)}))
	damage(t, h, s, Damage{Kind: DamageIntent, RunID: "r", Seq: 5, CallID: "c5", At: 2})
	_, err := s.Intents(ctx, "r", 5)
	wantCorrupt(t, err, "run r step 5", "c5")
	var buf strings.Builder
	wantCorrupt(t, s.Export(ctx, "r", &buf), "run r step 5", "c5")
}

// corruptToolList: a tool list whose body no longer matches its digest, or
// that is gone, is reported by the loads of the model calls that refer to
// it, from a store that has not cached the list.
func corruptToolList(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	st := newRun(t, s, "r")
	a := core.RequestModelCall{Role: core.Primary, Tools: []core.Tool{{Name: "search", Description: "searches the web"}}, State: st}
	a.State.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
	must(t, s.Checkpoint(ctx, leaseOf(t, s, "r"), store.Checkpoint{Seq: 1, Action: a}))
	damage(t, h, s, Damage{Kind: DamageToolLists, At: 4})
	_, err := reopen(t, h, s, nil).LoadStep(ctx, "r", 1)
	wantCorrupt(t, err, "run r step 1", "tool list")
	damage(t, h, s, Damage{Kind: DamageToolListsGone})
	_, err = reopen(t, h, s, nil).LoadStep(ctx, "r", 1)
	wantCorrupt(t, err, "run r step 1", "missing")
}

// corruptParallelDecode: long logs may be decoded on several goroutines:
// the states are the same whatever GOMAXPROCS, and a segment that passes
// its checksum but does not decode is still found, and named.
func corruptParallelDecode(t *testing.T, h Harness) {
	ctx := context.Background()
	s := longRun(t, h, 6*codec.SegmentSteps+9)
	sequential, err := s.LoadLatest(ctx, "r")
	must(t, err)
	for _, procs := range []int{2, 4} {
		old := runtime.GOMAXPROCS(procs)
		parallel, err := s.LoadLatest(ctx, "r")
		runtime.GOMAXPROCS(old)
		must(t, err)
		if !reflect.DeepEqual(parallel.State, sequential.State) {
			t.Fatalf("GOMAXPROCS %d: the state decoded in parallel differs", procs)
		}
	}
	from := 3 * codec.SegmentSteps
	damage(t, h, s, Damage{Kind: ResealSegment, RunID: "r", Seq: from})
	_, err = s.LoadLatest(ctx, "r")
	wantCorrupt(t, err, fmt.Sprintf("segment of steps %d-%d", from, from+codec.SegmentSteps-1))
}

// testToolCacheCorrupt: a tool cache entry whose bytes changed is reported
// corrupt, naming its key, never used, without its content in the error;
// the arguments it was keyed by are stored nowhere (only their digest is).
func testToolCacheCorrupt(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	tc, ok := s.(store.ToolCache)
	if !ok {
		t.Fatalf("the store (%T) does not implement store.ToolCache", s)
	}
	key := store.ToolCacheKey("agent", "lookup", "v1", []byte(`{"q":"argument-text-7731"}`))
	must(t, tc.CacheResult(ctx, store.CachedResult{Key: key, Tool: "lookup", Output: "a desk lamp"}, time.Hour))
	if rows := dump(t, h, s); h.Dump != nil && (bytes.Contains(rows, []byte("argument-text-7731")) || !bytes.Contains(rows, []byte("a desk lamp"))) {
		t.Fatal("the arguments are in the database, or the dump does not show the result")
	}
	damage(t, h, s, Damage{Kind: DamageToolCache, Key: key, At: 5})
	_, err := tc.CachedResult(ctx, key)
	wantCorrupt(t, err, key)
	if strings.Contains(err.Error(), "desk") {
		t.Fatalf("the corrupt entry's content is in the error: %v", err)
	}
}
