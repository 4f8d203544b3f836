package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// testExportImport: a run with segments, tool lists, intents and agent
// changes exports, imports into another store, and exports again to the
// same bytes; a run already stored or a damaged file is refused and leaves
// nothing behind.
func testExportImport(t *testing.T, h Harness) {
	ctx := context.Background()
	src := open(t, h, nil)
	l, g := create(t, src, "r", tools(2))
	for seq := 1; seq <= 70; seq++ {
		must(t, src.Checkpoint(ctx, l, g.next()))
		if seq == 7 {
			must(t, src.RecordIntent(ctx, l, 7, core.ToolCall{ID: "c7", Name: "search", Args: []byte(`{"q":"topic 7"}`)}))
			must(t, src.RecordOutcome(ctx, l, 7, core.ToolResult{CallID: "c7", Output: "found"}))
			must(t, src.RecordIntent(ctx, l, 7, core.ToolCall{ID: "c8", Name: "search", Args: []byte(`{}`)}))
		}
		if seq == 30 {
			must(t, src.ChangeAgent(ctx, l, []byte(`{"v":2}`)))
		}
	}
	must(t, src.SetStatus(ctx, l, store.StatusChange{Status: store.StatusInterrupted, Reason: "SIGTERM"}))
	var first bytes.Buffer
	must(t, src.Export(ctx, "r", &first))
	dst := open(t, h, nil)
	id, err := dst.Import(ctx, bytes.NewReader(first.Bytes()))
	if err != nil || id != "r" {
		t.Fatalf("import: %q %v", id, err)
	}
	var again bytes.Buffer
	must(t, dst.Export(ctx, "r", &again))
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("export after import differs from the original export")
	}
	if contents(t, src, "r") != contents(t, dst, "r") {
		t.Fatal("the imported run reads differently from the original")
	}
	ri, _ := dst.Run(ctx, "r")
	if ri.Lease.Owner != "" || ri.Status != store.StatusInterrupted || ri.Reason != "SIGTERM" {
		t.Fatalf("imported run: %+v", ri)
	}
	if _, err := dst.Import(ctx, bytes.NewReader(first.Bytes())); !errors.Is(err, store.ErrExists) {
		t.Fatalf("importing a run already stored: %v", err)
	}
	if err := src.Export(ctx, "nope", new(bytes.Buffer)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("exporting an unknown run: %v", err)
	}
	damaged := bytes.Replace(first.Bytes(), []byte(`"message_count":2,`), []byte(`"message_count":3,`), 1)
	for name, file := range map[string][]byte{"damaged": damaged, "truncated": first.Bytes()[:first.Len()/2], "not json": []byte("{")} {
		other := open(t, h, nil)
		if _, err := other.Import(ctx, bytes.NewReader(file)); err == nil {
			t.Errorf("%s: imported", name)
		}
		if _, err := other.Run(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: a refused import left the run behind", name)
		}
	}
	// An imported run is driven like any other.
	l2, err := dst.Acquire(ctx, "r", store.LeaseRequest{Owner: "x/1/y", TTL: time.Hour})
	must(t, err)
	must(t, dst.Checkpoint(ctx, l2, g.next()))

	// A stalled run keeps when it may be tried again.
	retry := time.Date(2031, 2, 3, 4, 5, 6, 789, time.UTC)
	ls, gs := create(t, src, "s", tools(1))
	must(t, src.Checkpoint(ctx, ls, gs.next()))
	must(t, src.SetStatus(ctx, ls, store.StatusChange{Status: store.StatusStalled, Reason: "429", RetryAt: retry}))
	var stalled, stalledAgain bytes.Buffer
	must(t, src.Export(ctx, "s", &stalled))
	if !bytes.Contains(stalled.Bytes(), []byte(`"retry_at":"2031-02-03T04:05:06.000000789Z"`)) {
		t.Fatalf("the export of a stalled run does not say when to retry: %.300s", stalled.String())
	}
	if _, err := dst.Import(ctx, bytes.NewReader(stalled.Bytes())); err != nil {
		t.Fatal(err)
	}
	if ri, _ := dst.Run(ctx, "s"); ri.Status != store.StatusStalled || !ri.RetryAt.Equal(retry) {
		t.Fatalf("imported stalled run: %s, retry at %s", ri.Status, ri.RetryAt)
	}
	must(t, dst.Export(ctx, "s", &stalledAgain))
	if !bytes.Equal(stalled.Bytes(), stalledAgain.Bytes()) {
		t.Fatal("the stalled run's export after import differs")
	}
	if bytes.Contains(first.Bytes(), []byte(`"retry_at"`)) {
		t.Fatal("a run that is not stalled exports a retry time")
	}
}

// testListRuns: filters by status (one or several), agent and limit, newest
// first, and the cursor pages through every run once.
func testListRuns(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	var ids []string
	for i := range 23 {
		id := fmt.Sprintf("run-%02d", i)
		ids = append(ids, id)
		l, g := create(t, s, id, nil)
		if i%3 == 0 {
			must(t, s.Checkpoint(ctx, l, g.pause()))
		}
		if i%5 == 0 {
			must(t, s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled}))
		}
		clock.Add(time.Second)
	}
	all, err := s.ListRuns(ctx, store.Filter{})
	must(t, err)
	if len(all) != len(ids) || all[0].ID != ids[len(ids)-1] || all[len(all)-1].ID != ids[0] {
		t.Fatalf("ListRuns: %d runs, first %s", len(all), all[0].ID)
	}
	count := func(f store.Filter) int {
		runs, err := s.ListRuns(ctx, f)
		must(t, err)
		for _, r := range runs {
			if f.Status != "" && r.Status != f.Status && len(f.Statuses) == 0 {
				t.Fatalf("%+v returned a %s run", f, r.Status)
			}
		}
		return len(runs)
	}
	if n := count(store.Filter{Status: store.StatusStalled}); n != 5 {
		t.Fatalf("%d stalled runs, want 5", n)
	}
	if n := count(store.Filter{Statuses: []store.Status{store.StatusStalled, store.StatusAwaitingToolResults}}); n != 5+8-2 {
		t.Fatalf("%d stalled or paused runs, want 11", n)
	}
	if n := count(store.Filter{Agent: "agent", Limit: 4}); n != 4 {
		t.Fatalf("limit 4 gave %d", n)
	}
	if n := count(store.Filter{Agent: "other"}); n != 0 {
		t.Fatalf("another agent gave %d", n)
	}
	var paged []string
	f := store.Filter{Limit: 5}
	for {
		page, err := s.ListRuns(ctx, f)
		must(t, err)
		for _, r := range page {
			paged = append(paged, r.ID)
		}
		if len(page) < f.Limit {
			break
		}
		f.Before = store.CursorOf(page[len(page)-1])
	}
	var want []string
	for _, r := range all {
		want = append(want, r.ID)
	}
	if strings.Join(paged, ",") != strings.Join(want, ",") {
		t.Fatalf("paging:\n got %v\nwant %v", paged, want)
	}
}

// testMemory: entities are upserted with ordered, distinct observations;
// relations to entities not stored yet create them; search ranks the best
// match first and treats the query's words as words, never syntax;
// traversal walks relations breadth first up to a depth; namespaces are
// apart.
func testMemory(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	created, err := s.MemoryCreate(ctx, "ns", []core.Entity{
		{Name: "Ada Lovelace", Type: "person", Observations: []string{"wrote the first program", "worked with Babbage"}},
		{Name: "Analytical Engine", Type: "machine", Observations: []string{"a mechanical general-purpose computer"}},
	}, []core.Relation{{From: "Ada Lovelace", To: "Analytical Engine", Type: "programmed"}, {From: "Charles Babbage", To: "Analytical Engine", Type: "designed"}})
	must(t, err)
	if len(created.Entities) < 2 || created.Relations != 2 {
		t.Fatalf("created %+v", created)
	}
	_, err = s.MemoryCreate(ctx, "ns", []core.Entity{{Name: "Ada Lovelace", Observations: []string{"wrote the first program", "was a mathematician"}}}, nil)
	must(t, err)
	_, err = s.MemoryCreate(ctx, "other", []core.Entity{{Name: "Ada Lovelace", Observations: []string{"a different namespace"}}}, nil)
	must(t, err)
	hits, err := s.MemorySearch(ctx, "ns", "mathematician program", 5)
	must(t, err)
	if len(hits) == 0 || hits[0].Entity.Name != "Ada Lovelace" {
		t.Fatalf("search: %+v", hits)
	}
	obs := hits[0].Entity.Observations
	if len(obs) != 3 || obs[0] != "wrote the first program" || obs[2] != "was a mathematician" || hits[0].Entity.Type != "person" {
		t.Fatalf("observations upserted: %+v", hits[0].Entity)
	}
	for _, q := range []string{`"unbalanced`, `NEAR(x y)`, `a* OR b`, `-x`, `:`, ``} {
		if _, err := s.MemorySearch(ctx, "ns", q, 5); err != nil {
			t.Errorf("query %q: %v", q, err)
		}
	}
	if hits, _ := s.MemorySearch(ctx, "ns", "mechanical", 5); len(hits) != 1 || hits[0].Entity.Name != "Analytical Engine" {
		t.Fatalf("search mechanical: %+v", hits)
	}
	if hits, _ := s.MemorySearch(ctx, "ns", "different namespace", 5); len(hits) != 0 {
		t.Fatalf("a search saw another namespace: %+v", hits)
	}
	tr, err := s.MemoryTraverse(ctx, "ns", "Ada Lovelace", "", 2)
	must(t, err)
	names := map[string]bool{}
	for _, e := range tr.Entities {
		names[e.Name] = true
	}
	if !names["Analytical Engine"] || len(tr.Relations) == 0 {
		t.Fatalf("traverse: %+v", tr)
	}
	tr, err = s.MemoryTraverse(ctx, "ns", "Ada Lovelace", "designed", 2)
	must(t, err)
	if len(tr.Relations) != 0 {
		t.Fatalf("traverse by a relation Ada has none of: %+v", tr)
	}
}
