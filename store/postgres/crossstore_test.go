//go:build cgo

package postgres

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// TestExportAcrossStores: a run exported by SQLite imports into
// PostgreSQL and exports from it to the same bytes, and back into SQLite
// to the same bytes again; and the other way round. Both stores hold the
// same run the same way: every step loads back identically.
func TestExportAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "a.db"), &sqlite.Options{Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := openTest(t)
	for _, c := range []struct {
		name     string
		from, to store.Store
	}{
		{"sqlite", lite, pg},
		{"postgres", pg, lite},
	} {
		id := "from-" + c.name
		cps := exportRun(t, c.from, id, 2*codec.SegmentSteps+3)
		var first, second, third bytes.Buffer
		if err := c.from.Export(ctx, id, &first); err != nil {
			t.Fatal(err)
		}
		if _, err := c.to.Import(ctx, bytes.NewReader(first.Bytes())); err != nil {
			t.Fatalf("%s → other: %v", c.name, err)
		}
		if err := c.to.Export(ctx, id, &second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("%s: the other store exports the run differently", c.name)
		}
		back := openBack(t, c.name)
		if _, err := back.Import(ctx, bytes.NewReader(second.Bytes())); err != nil {
			t.Fatal(err)
		}
		if err := back.Export(ctx, id, &third); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), third.Bytes()) {
			t.Fatalf("%s: the run exports differently after a round trip through the other store", c.name)
		}
		for i, cp := range cps {
			rec, err := c.to.LoadStep(ctx, id, i+1)
			if err != nil {
				t.Fatal(err)
			}
			sameStep(t, rec, i+1, cp.Action.Next(), cp.Action, cp.Result)
		}
		a, _ := c.from.Run(ctx, id)
		b, _ := c.to.Run(ctx, id)
		a.Lease, b.Lease = store.Lease{}, store.Lease{}
		if a.Created != b.Created || a.Updated != b.Updated || a.Status != b.Status || a.Reason != b.Reason || a.LastSeq != b.LastSeq ||
			string(a.Config) != string(b.Config) || string(a.StartConfig) != string(b.StartConfig) {
			t.Fatalf("%s: run info differs:\n%+v\n%+v", c.name, a, b)
		}
	}
}

// openBack opens a fresh store of the kind a run came from.
func openBack(t *testing.T, kind string) store.Store {
	t.Helper()
	if kind != "sqlite" {
		return openWith(t, nil)
	}
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "back.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMemorySearchAgreesWithSQLite: the same memory in both stores gives
// the same hits in the same order with the same scores, BM25 being computed
// the same way from the same statistics.
func TestMemorySearchAgreesWithSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "m.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := openTest(t)
	for _, s := range []store.Memory{lite, pg} {
		for _, batch := range memoryFixture {
			if _, err := s.MemoryCreate(ctx, batch.ns, batch.entities, batch.relations); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range memoryQueries {
		for _, ns := range []string{"ns", "other"} {
			want, err := lite.MemorySearch(ctx, ns, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.MemorySearch(ctx, ns, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s %q: %d hits, SQLite %d: %s vs %s", ns, q, len(got), len(want), hitNames(got), hitNames(want))
			}
			for i := range want {
				if got[i].Entity.Name != want[i].Entity.Name || got[i].Score != want[i].Score ||
					strings.Join(got[i].Entity.Observations, "|") != strings.Join(want[i].Entity.Observations, "|") || got[i].Entity.Type != want[i].Entity.Type {
					t.Fatalf("%s %q: hit %d is %s (%v), SQLite's %s (%v)", ns, q, i, got[i].Entity.Name, got[i].Score, want[i].Entity.Name, want[i].Score)
				}
			}
		}
	}
}
