package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// memRun is a run stored in memory as a backend stores it: step rows and
// segments, with their checksums.
type memRun struct {
	rk     int64
	rows   []codec.Row
	segs   []codec.Segment
	states []core.State
}

func newMemRun(t *testing.T, steps int) *memRun {
	t.Helper()
	st := storetest.BaseState("q", []core.Message{{Role: core.RoleSystem, Content: "be brief"}, {Role: core.RoleUser, Content: "q"}})
	r := &memRun{rk: 7, states: []core.State{st}}
	row, err := codec.Initial(st, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.add(t, row)
	log := st.Messages
	for seq := 1; seq <= steps; seq++ {
		var cp store.Checkpoint
		cp, log = storetest.TurnStep(log, seq, 100)
		last := &r.rows[len(r.rows)-1]
		row, _, err := codec.Build(nil, nil, last.Tail(r.rk, store.StatusRunning), cp, int64(seq), nil)
		if err != nil {
			t.Fatal(err)
		}
		r.add(t, row)
		r.states = append(r.states, cp.Action.Next())
	}
	return r
}

func (r *memRun) add(t *testing.T, row codec.Row) {
	row.Sum = codec.StepSum(r.rk, &row)
	row.Buf = nil
	r.rows = append(r.rows, row)
	if codec.ClosesSegment(row.Seq) {
		from := codec.SegmentStart(row.Seq)
		sg, ok, err := codec.SegmentFromRows("r", r.rk, r.rows[max(from-1, 0):row.Seq], &r.rows[row.Seq])
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			r.segs = append(r.segs, sg)
		}
	}
}

// load loads step seq through c as a backend does.
func (r *memRun) load(c *codec.LogCache, seq int) ([]core.Message, error) {
	log, err := r.loadPlanned(c, c.Plan(r.rk, seq))
	if errors.Is(err, codec.ErrStale) {
		log, err = r.loadPlanned(c, codec.FullPlan(seq))
	}
	return log, err
}

func (r *memRun) loadPlanned(c *codec.LogCache, p codec.LogPlan) ([]core.Message, error) {
	return r.loadRow(c, p, r.rows[p.Seq])
}

// loadRow is loadPlanned with the step's row as given.
func (r *memRun) loadRow(c *codec.LogCache, p codec.LogPlan, row codec.Row) ([]core.Message, error) {
	b := codec.SegmentStart(p.Seq + 1)
	var segs []codec.Segment
	for _, sg := range r.segs {
		if sg.From < b {
			if sg.From < p.BodiesFrom {
				sg.Body = nil
			}
			segs = append(segs, sg)
		}
	}
	var rows []codec.Row
	if p.RowsFrom < p.Seq {
		rows = r.rows[p.RowsFrom:p.Seq]
	}
	return c.Load("r", r.rk, p, &row, segs, rows, nil)
}

func (r *memRun) check(t *testing.T, c *codec.LogCache, seq int) {
	t.Helper()
	log, err := r.load(c, seq)
	if err != nil {
		t.Fatalf("step %d: %v", seq, err)
	}
	r.same(t, seq, log)
}

func (r *memRun) same(t *testing.T, seq int, log []core.Message) {
	t.Helper()
	st := r.states[seq]
	got := st
	got.Messages = log
	a, _ := core.EncodeState(got)
	b, _ := core.EncodeState(st)
	if !bytes.Equal(a, b) || cap(log) != len(log) {
		t.Fatalf("step %d: %d messages (cap %d), want %d", seq, len(log), cap(log), len(st.Messages))
	}
}

// TestLogCacheInterleaved: plans taken before other loads extend the
// entry (as concurrent loads do) still give the right log, whichever
// extends first, within the open segment and across a segment's close.
func TestLogCacheInterleaved(t *testing.T) {
	r := newMemRun(t, 3*codec.SegmentSteps+10)
	for _, c := range []struct{ base, a, b int }{
		{70, 75, 80}, {70, 80, 75}, {70, 75, 75}, {70, 130, 140}, {70, 140, 130}, {70, 80, 130}, {70, 130, 80}, {60, 63, 64},
	} {
		cache := codec.NewLogCache(0)
		r.check(t, cache, c.base)
		pa, pb := cache.Plan(r.rk, c.a), cache.Plan(r.rk, c.b)
		lb, err := r.loadPlanned(cache, pb)
		if err != nil {
			t.Fatal(err)
		}
		r.same(t, c.b, lb)
		la, err := r.loadPlanned(cache, pa)
		if err != nil && !errors.Is(err, codec.ErrStale) {
			t.Fatal(err)
		}
		if err == nil {
			r.same(t, c.a, la)
		}
		for _, seq := range []int{c.a, c.b, c.base, len(r.rows) - 1} {
			r.check(t, cache, seq)
		}
		if st := cache.Stats(); st.Runs != 1 || st.Hits == 0 || st.Stale != 0 {
			t.Fatalf("%v: %+v", c, st)
		}
	}
}

// TestLogCacheStale: a row or a segment replaced under a new checksum
// after the cache read it makes the entry stale (and the load reads
// everything); one that does not decode is reported.
func TestLogCacheStale(t *testing.T) {
	r := newMemRun(t, 2*codec.SegmentSteps+10)
	cache := codec.NewLogCache(0)
	r.check(t, cache, 2*codec.SegmentSteps+5)
	p := cache.Plan(r.rk, 2*codec.SegmentSteps+3)
	// The row of step 131 as another (valid) row under its checksum.
	other := r.rows[2*codec.SegmentSteps+3]
	other.Created++
	other.Sum = codec.StepSum(r.rk, &other)
	if _, err := r.loadRow(cache, p, other); !errors.Is(err, codec.ErrStale) {
		t.Fatalf("a row replaced: %v", err)
	}
	if st := cache.Stats(); st.Runs != 0 || st.Stale != 1 {
		t.Fatalf("after a stale entry: %+v", st)
	}
	r.check(t, cache, 2*codec.SegmentSteps+5)
	sg := &r.segs[1]
	sg.Body = append(bytes.Clone(sg.Body[:len(sg.Body)-1]), 1) // plain, not S2: does not decode
	sg.Sum = codec.SegmentSum(r.rk, sg.From, sg.To, sg.First, sg.N, sg.Body)
	if _, err := r.load(cache, 2*codec.SegmentSteps+5); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a resealed segment: %v", err)
	}
}

// TestRunCacheHoldsAThousandTails: the tails of 1,000 runs written at once
// all stay remembered (a server drives that many), and a forgotten one is
// gone.
func TestRunCacheHoldsAThousandTails(t *testing.T) {
	var c codec.RunCache
	for i := range 1000 {
		c.SetTail(fmt.Sprint("run", i), codec.Tail{RK: int64(i), Seq: i})
	}
	for i := range 1000 {
		got, ok := c.Tail(fmt.Sprint("run", i))
		if !ok || got.RK != int64(i) || got.Seq != i {
			t.Fatalf("run%d: %+v, %v", i, got, ok)
		}
	}
	c.ForgetTail("run7")
	if _, ok := c.Tail("run7"); ok {
		t.Fatal("run7 still remembered")
	}
}
