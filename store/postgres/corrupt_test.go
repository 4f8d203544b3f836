package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// longRun stores a run of n steps and returns its store.
func longRun(t *testing.T, n int) *Postgres {
	s := openTest(t)
	log := newRun(t, s, "r").Messages
	for seq := 1; seq <= n; seq++ {
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 200)
		if err := s.Checkpoint(context.Background(), leaseOf(t, s, "r"), cp); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestCorruptStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, at := range []int{0, 7, 40} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			t.Parallel()
			s := longRun(t, 6)
			flip(t, s, "steps", "body", "seq = 3", at)
			_, err := s.LoadStep(ctx, "r", 3)
			wantCorrupt(t, err, "run r step 3", "checksum")
			if _, err := s.LoadStep(ctx, "r", 2); err != nil {
				t.Fatalf("step 2 should still load: %v", err)
			}
			// Later steps of its segment read its messages from it.
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

func TestCorruptMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := longRun(t, 6)
	flip(t, s, "steps", "body", "seq = 4", 11)
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

// TestCorruptSegment: a segment (the copy of 64 steps' messages that loads
// read) that fails its checksum is reported by the loads that read it, and
// a corrupt step row is never copied into a new segment.
func TestCorruptSegment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := longRun(t, 3*codec.SegmentSteps+5)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM segments`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d segments, want 3 (%v)", n, err)
	}
	flip(t, s, "segments", "body", "seq_from = 64", 10)
	for _, seq := range []int{0, 63, 64, 100, 126} {
		if _, err := s.LoadStep(ctx, "r", seq); err != nil {
			t.Fatalf("step %d does not read the segment of steps 64-127 but fails: %v", seq, err)
		}
	}
	_, err := s.LoadStep(ctx, "r", 127)
	wantCorrupt(t, err, "run r step 127", "segment of steps 64-127")
	_, err = s.LoadLatest(ctx, "r")
	wantCorrupt(t, err, "segment of steps 64-127")
	err = s.StepsFrom(ctx, "r", 150, func(store.StepRecord) error { return nil })
	wantCorrupt(t, err, "segment of steps 64-127")
	if err := s.Steps(ctx, "r", func(store.StepRecord) error { return nil }); err != nil {
		t.Fatalf("Steps reads the step rows, which are fine: %v", err)
	}
	// A corrupt step row is not copied into a new segment under a fresh
	// checksum: the checkpoint that would copy it refuses. (A store that
	// wrote the segment's steps itself copies them from memory; a store
	// opened afresh reads them back.)
	flip(t, s, "steps", "body", "seq = 195", 3)
	s2 := reopen(t, s, nil)
	g := newSynth("r")
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

// TestCorruptButSummed: a record whose checksum was rewritten to match
// still fails to decode, with both sentinels.
func TestCorruptButSummed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := longRun(t, 6)
	rk := rkOf(t, s, "r")
	var row codec.Row
	if err := scanStep(s.pool.QueryRow(ctx, `SELECT `+stepColumns+` FROM steps s WHERE seq = 2`), &row); err != nil {
		t.Fatal(err)
	}
	if err := row.Open(); err != nil {
		t.Fatal(err)
	}
	row.Head = []byte{0xa1, 0x01, 0x01} // a state with only a version: no phase
	row.Seal()
	exec(t, s, `UPDATE steps SET body = $1, sum = $2 WHERE seq = 2`, row.Body, codec.StepSum(rk, &row))
	_, err := s.LoadStep(ctx, "r", 2)
	wantCorrupt(t, err, "run r step 2")
	if !errors.Is(err, core.ErrCorrupt) {
		t.Fatalf("want core.ErrCorrupt too: %v", err)
	}
}

func TestCorruptLastStep(t *testing.T) {
	t.Parallel()
	s := longRun(t, 6)
	flip(t, s, "steps", "body", "seq = 6", 3)
	// A store that did not write the run's last step (a resumed process)
	// reads it back and verifies it before writing on top of it.
	s.cache.ForgetTail("r")
	g := newSynth("r")
	var next store.Checkpoint
	for i := 0; i < 7; i++ {
		next = g.next()
	}
	err := s.Checkpoint(context.Background(), leaseOf(t, s, "r"), next)
	wantCorrupt(t, err, "run r step 6")
	_, err = s.LoadLatest(context.Background(), "r")
	wantCorrupt(t, err, "run r step 6")
}

func TestCorruptIntent(t *testing.T) {
	t.Parallel()
	s := longRun(t, 6)
	ctx := context.Background()
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 5, core.ToolCall{ID: "c5", Name: "search", Args: []byte(`{"q":1}`)}); err != nil {
		t.Fatal(err)
	}
	flip(t, s, "intents", "args", "call_id = 'c5'", 2)
	_, err := s.Intents(ctx, "r", 5)
	wantCorrupt(t, err, "run r step 5", "c5")
	var buf strings.Builder
	wantCorrupt(t, s.Export(ctx, "r", &buf), "run r step 5", "c5")
}

// TestCorruptToolList: a tool list whose body no longer matches its digest
// is reported by the loads of the model calls that refer to it.
func TestCorruptToolList(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	st := newRun(t, s, "r")
	a := core.RequestModelCall{Role: core.Primary, Tools: []core.Tool{{Name: "search", Description: "searches the web"}}, State: st}
	a.State.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
	if err := s.Checkpoint(ctx, leaseOf(t, s, "r"), store.Checkpoint{Seq: 1, Action: a}); err != nil {
		t.Fatal(err)
	}
	flip(t, s, "tool_lists", "body", "true", 4)
	fresh := reopen(t, s, nil) // a store that has not cached the list
	_, err := fresh.LoadStep(ctx, "r", 1)
	wantCorrupt(t, err, "run r step 1", "tool list")
	exec(t, s, `DELETE FROM tool_lists`)
	_, err = reopen(t, s, nil).LoadStep(ctx, "r", 1)
	wantCorrupt(t, err, "run r step 1", "missing")
}

// Long logs are decoded on several goroutines: the states are the same as
// decoded one segment after the other, and a segment that passes its
// checksum but does not decode is still found, and named.
func TestParallelSegmentDecode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := longRun(t, 6*codec.SegmentSteps+9)
	sequential, err := s.LoadLatest(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{2, 4} {
		old := runtime.GOMAXPROCS(procs)
		parallel, err := s.LoadLatest(ctx, "r")
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(parallel.State, sequential.State) {
			t.Fatalf("GOMAXPROCS %d: the state decoded in parallel differs", procs)
		}
	}
	rk := rkOf(t, s, "r")
	var from, to, first, n int
	if err := s.pool.QueryRow(ctx, `SELECT seq_from, seq_to, first, n FROM segments WHERE seq_from = $1`, 3*codec.SegmentSteps).Scan(&from, &to, &first, &n); err != nil {
		t.Fatal(err)
	}
	bad := codec.NewSegment(rk, from, to, first, n, []byte{0xff, 0x01}) // a break code where a message starts
	exec(t, s, `UPDATE segments SET body = $1, sum = $2 WHERE seq_from = $3`, bad.Body, bad.Sum, from)
	_, err = s.LoadLatest(ctx, "r")
	wantCorrupt(t, err, fmt.Sprintf("segment of steps %d-%d", from, to))
}
