package sqlite

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

// corruptRun stores a run of 6 steps and returns its store.
func corruptRun(t *testing.T) *SQLite { return longRun(t, 6) }

// longRun stores a run of n steps and returns its store.
func longRun(t *testing.T, n int) *SQLite {
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

// flip inverts one byte of a blob column of the rows where matches.
func flip(t *testing.T, s *SQLite, table, column, where string, at int) {
	t.Helper()
	var b []byte
	if err := s.w.QueryRow(`SELECT ` + column + ` FROM ` + table + ` WHERE ` + where).Scan(&b); err != nil {
		t.Fatal(err)
	}
	b[at%len(b)] ^= 0x20
	if _, err := s.w.Exec(`UPDATE `+table+` SET `+column+` = ? WHERE `+where, b); err != nil {
		t.Fatal(err)
	}
}

func wantCorrupt(t *testing.T, err error, names ...string) {
	t.Helper()
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("got %v, want store.ErrCorrupt", err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("error %q does not name %q", err, n)
		}
	}
}

func TestCorruptStep(t *testing.T) {
	ctx := context.Background()
	for _, at := range []int{0, 7, 40} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			s := corruptRun(t)
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
			var buf strings.Builder
			wantCorrupt(t, s.Export(ctx, "r", &buf), "run r step 3")
		})
	}
}

func TestCorruptMessages(t *testing.T) {
	ctx := context.Background()
	s := corruptRun(t)
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
// read) that fails its checksum is reported by the loads that read it.
func TestCorruptSegment(t *testing.T) {
	ctx := context.Background()
	s := longRun(t, 3*codec.SegmentSteps+5)
	var n int
	s.r.QueryRow(`SELECT count(*) FROM segments`).Scan(&n)
	if n != 3 {
		t.Fatalf("%d segments, want 3", n)
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
	if err := s.Steps(ctx, "r", func(store.StepRecord) error { return nil }); err != nil {
		t.Fatalf("Steps reads the step rows, which are fine: %v", err)
	}
	// A corrupt step row is not copied into a new segment under a fresh
	// checksum: the checkpoint that would copy it refuses. (A store that
	// wrote the segment's steps itself copies them from memory; a store
	// opened afresh reads them back.)
	flip(t, s, "steps", "body", "seq = 195", 3)
	s, err = Open(s.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := newSynth("r")
	for seq := 1; seq < 4*codec.SegmentSteps; seq++ {
		cp := g.next()
		if seq <= 3*codec.SegmentSteps+5 {
			continue
		}
		err = s.Checkpoint(ctx, leaseOf(t, s, "r"), cp)
		if seq < 4*codec.SegmentSteps-1 && err != nil {
			t.Fatal(err)
		}
	}
	wantCorrupt(t, err, "run r step 195")
}

// TestCorruptButSummed: a record whose checksum was rewritten to match
// still fails to decode, with both sentinels.
func TestCorruptButSummed(t *testing.T) {
	ctx := context.Background()
	s := corruptRun(t)
	var rk int64
	s.w.QueryRow(`SELECT rk FROM runs WHERE id = 'r'`).Scan(&rk)
	var row codec.Row
	if err := scanStep(s.w.QueryRow(`SELECT `+stepColumns+` FROM steps s WHERE seq = 2`), &row); err != nil {
		t.Fatal(err)
	}
	if err := row.Open(); err != nil {
		t.Fatal(err)
	}
	row.Head = []byte{0xa1, 0x01, 0x01} // a state with only a version: no phase
	row.Seal()
	if _, err := s.w.Exec(`UPDATE steps SET body = ?, sum = ? WHERE seq = 2`, row.Body, codec.StepSum(rk, &row)); err != nil {
		t.Fatal(err)
	}
	_, err := s.LoadStep(ctx, "r", 2)
	wantCorrupt(t, err, "run r step 2")
	if !errors.Is(err, core.ErrCorrupt) {
		t.Fatalf("want core.ErrCorrupt too: %v", err)
	}
}

func TestCorruptLastStep(t *testing.T) {
	s := corruptRun(t)
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
	s := corruptRun(t)
	ctx := context.Background()
	if err := s.RecordIntent(ctx, leaseOf(t, s, "r"), 5, core.ToolCall{ID: "c5", Name: "search", Args: []byte(`{"q":1}`)}); err != nil {
		t.Fatal(err)
	}
	flip(t, s, "intents", "args", "call_id = 'c5'", 2)
	_, err := s.Intents(ctx, "r", 5)
	wantCorrupt(t, err, "run r step 5", "c5")
}

// Long logs are decoded on several goroutines: the states are the same as
// decoded one segment after the other, and a segment that passes its
// checksum but does not decode is still found, and named.
func TestParallelSegmentDecode(t *testing.T) {
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
	// Segment 3 made undecodable under a valid checksum.
	var rk int64
	s.w.QueryRow(`SELECT rk FROM runs WHERE id = 'r'`).Scan(&rk)
	var from, to, first, n int
	var body []byte
	if err := s.w.QueryRow(`SELECT seq_from, seq_to, first, n, body FROM segments WHERE seq_from = ?`, 3*codec.SegmentSteps).Scan(&from, &to, &first, &n, &body); err != nil {
		t.Fatal(err)
	}
	bad := codec.NewSegment(rk, from, to, first, n, []byte{0xff, 0x01}) // a break code where a message starts
	if _, err := s.w.Exec(`UPDATE segments SET body = ?, sum = ? WHERE seq_from = ?`, bad.Body, bad.Sum, from); err != nil {
		t.Fatal(err)
	}
	_, err = s.LoadLatest(ctx, "r")
	wantCorrupt(t, err, fmt.Sprintf("segment of steps %d-%d", from, to))
}
