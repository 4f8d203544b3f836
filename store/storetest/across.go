package storetest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Across checks that the stores of two backends agree: a run exported by
// one imports into the other, exports from it to the same bytes, and back
// into the first to the same bytes again, loading identically in both;
// and the same memory gives the same search hits in the same order with
// the same scores. Only Open of each harness is used. Call it from the
// tests of a backend that can import the other one.
func Across(t *testing.T, a, b Harness) {
	t.Run("Export", func(t *testing.T) {
		acrossExport(t, a, b, "a")
		acrossExport(t, b, a, "b")
	})
	t.Run("MemorySearch", func(t *testing.T) { acrossMemory(t, a, b) })
}

// acrossExport: a run of from goes to a store of to, and back to one of
// from.
func acrossExport(t *testing.T, from, to Harness, name string) {
	ctx := context.Background()
	src, dst := open(t, from, NewClock().Now), open(t, to, nil)
	id := "from-" + name
	cps := exportRun(t, src, id, 2*codec.SegmentSteps+3)
	var first, second, third bytes.Buffer
	must(t, src.Export(ctx, id, &first))
	if _, err := dst.Import(ctx, bytes.NewReader(first.Bytes())); err != nil {
		t.Fatalf("%s → other: %v", name, err)
	}
	must(t, dst.Export(ctx, id, &second))
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("%s: the other store exports the run differently", name)
	}
	back := open(t, from, nil)
	must(t, errors2(back.Import(ctx, bytes.NewReader(second.Bytes()))))
	must(t, back.Export(ctx, id, &third))
	if !bytes.Equal(first.Bytes(), third.Bytes()) {
		t.Fatalf("%s: the run exports differently after a round trip through the other store", name)
	}
	for i, cp := range cps {
		rec, err := dst.LoadStep(ctx, id, i+1)
		must(t, err)
		sameStep(t, rec, i+1, cp.Action.Next(), cp.Action, cp.Result)
	}
	ra, _ := src.Run(ctx, id)
	rb, _ := dst.Run(ctx, id)
	ra.Lease, rb.Lease = store.Lease{}, store.Lease{}
	if ra.Created != rb.Created || ra.Updated != rb.Updated || ra.Status != rb.Status || ra.Reason != rb.Reason || ra.LastSeq != rb.LastSeq ||
		string(ra.Config) != string(rb.Config) || string(ra.StartConfig) != string(rb.StartConfig) {
		t.Fatalf("%s: run info differs:\n%+v\n%+v", name, ra, rb)
	}
}

// errors2 drops the first of two results.
func errors2(_ string, err error) error { return err }

// acrossMemory: memoryFixture in both stores, memoryQueries in both
// namespaces: the same hits, in the same order, with the same scores.
func acrossMemory(t *testing.T, a, b Harness) {
	ctx := context.Background()
	sa, sb := open(t, a, nil), open(t, b, nil)
	for _, s := range []store.Store{sa, sb} {
		for _, batch := range memoryFixture {
			if _, err := s.MemoryCreate(ctx, batch.ns, batch.entities, batch.relations); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range memoryQueries {
		for _, ns := range []string{"ns", "other"} {
			want, err := sa.MemorySearch(ctx, ns, q, 10)
			must(t, err)
			got, err := sb.MemorySearch(ctx, ns, q, 10)
			must(t, err)
			if len(got) != len(want) {
				t.Fatalf("%s %q: %d hits, the other %d: %s vs %s", ns, q, len(got), len(want), hitNames(got), hitNames(want))
			}
			for i := range want {
				if got[i].Entity.Name != want[i].Entity.Name || got[i].Score != want[i].Score ||
					strings.Join(got[i].Entity.Observations, "|") != strings.Join(want[i].Entity.Observations, "|") || got[i].Entity.Type != want[i].Entity.Type {
					t.Fatalf("%s %q: hit %d is %s (%v), the other's %s (%v)", ns, q, i, got[i].Entity.Name, got[i].Score, want[i].Entity.Name, want[i].Score)
				}
			}
		}
	}
}
