package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

func hitNames(hs []core.MemoryHit) string {
	var es []core.Entity
	for _, h := range hs {
		es = append(es, h.Entity)
	}
	return names(es)
}

// memoryFixture is the memory the search cases store, in batches of
// namespace, entities and relations; memoryQueries are queries to run on
// it (Across compares two backends' rankings of them).
var memoryFixture = []struct {
	ns        string
	entities  []core.Entity
	relations []core.Relation
}{
	{"ns", []core.Entity{
		{Name: "Paris", Type: "city", Observations: []string{"capital of France", "on the Seine"}},
		{Name: "Lyon", Type: "city", Observations: []string{"a city in France known for food, with a long history of silk weaving and many restaurants"}},
		{Name: "Berlin", Type: "city", Observations: []string{"capital of Germany"}},
		{Name: "Café de Flore", Type: "place", Observations: []string{"a café in Paris"}},
		{Name: "Tokyo", Type: "city", Observations: []string{"東京 capital of Japan"}},
	}, nil},
	{"other", []core.Entity{{Name: "Paris", Observations: []string{"capital of France in another namespace"}}}, nil},
	{"ns", []core.Entity{
		{Name: "Seine", Type: "river", Observations: []string{"flows through Paris", "the river of Paris, Paris, Paris"}},
		{Name: "France", Type: "country", Observations: []string{"its capital is Paris"}},
		{Name: "Naïve Café", Type: "place", Observations: []string{"NAÏVE coffee, café crème"}},
	}, []core.Relation{{From: "Paris", To: "France", Type: "capital_of"}, {From: "Seine", To: "Paris", Type: "flows_through"}}},
}

// memoryQueries are the queries Across runs on memoryFixture.
var memoryQueries = []string{
	"capital France", "paris", "PARIS river", "cafe", "CAFÉ", "naive", "東京", "nothing matches", "city", "capital",
	`"capital" AND -"Japan*"`, "Paris paris PARIS", "café cafe", "the of a in",
}

// testMemorySearch: search ranks best first (BM25 over words folded for
// case and accents), scoped by namespace, with a default limit; a query
// that would be syntax in any search language is just words.
func testMemorySearch(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	for _, b := range memoryFixture[:2] {
		if _, err := s.MemoryCreate(ctx, b.ns, b.entities, b.relations); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		query string
		limit int
		want  string
	}{
		{"capital France", 10, "Paris,Berlin,Tokyo,Lyon"},
		{"capital France", 1, "Paris"},
		{"paris", 10, "Paris,Café de Flore"},
		{"cafe", 10, "Café de Flore"},
		{"東京", 10, "Tokyo"},
		{"nothing matches", 10, ""},
	} {
		got, err := s.MemorySearch(ctx, "ns", c.query, c.limit)
		if err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		if hitNames(got) != c.want {
			t.Errorf("search %q: %s, want %s", c.query, hitNames(got), c.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score {
				t.Errorf("search %q: not best first: %+v", c.query, got)
			}
		}
	}
	hits, _ := s.MemorySearch(ctx, "ns", "capital France", 1)
	if len(hits) != 1 || len(hits[0].Entity.Observations) != 2 || hits[0].Entity.Type != "city" || hits[0].Score <= 0 {
		t.Errorf("hit entity: %+v", hits)
	}
	if hits, _ := s.MemorySearch(ctx, "other", "capital", 10); hitNames(hits) != "Paris" || hits[0].Entity.Observations[0] != "capital of France in another namespace" {
		t.Errorf("namespace scoping: %+v", hits)
	}
	if hits, _ := s.MemorySearch(ctx, "none", "capital", 10); len(hits) != 0 {
		t.Errorf("empty namespace: %+v", hits)
	}
	// Every namespace (memory_search with global: true): both Parises.
	all, err := s.MemorySearch(ctx, core.AllNamespaces, "capital France", 10)
	if err != nil {
		t.Fatal(err)
	}
	paris := 0
	for _, h := range all {
		if h.Entity.Name == "Paris" {
			paris++
		}
	}
	if paris != 2 || len(all) != 5 {
		t.Errorf("search every namespace: %s", hitNames(all))
	}
	if hits, _ := s.MemorySearch(ctx, "ns", "capital", 0); len(hits) != 3 {
		t.Errorf("default limit: %d hits", len(hits))
	}
	// Queries that would be syntax anywhere are just words.
	for _, q := range []string{`"`, `"capital`, `*`, `capital*`, `AND`, `capital AND`, `OR NOT`, `-capital`, `capital -France`,
		`NEAR(capital France)`, `col:capital`, `^capital`, `(`, `)`, `'`, ``, `   `, "\x00", `é`, `🙂`, `name:Paris`, `{capital}`, `"a""b"`,
		`capital & france | !paris`, `'capital':*`, `capital <-> france`, `\`, `a\'b`, strings.Repeat("word ", 100)} {
		if _, err := s.MemorySearch(ctx, "ns", q, 5); err != nil {
			t.Errorf("query %q: %v", q, err)
		}
	}
	if hits, _ := s.MemorySearch(ctx, "ns", `"capital" AND -"Japan*"`, 10); len(hits) == 0 {
		t.Errorf("hostile query found nothing")
	}
}

// testMemoryConcurrentCreate: observations and relations appended at once
// to one entity, by 16 writers, are all kept, none twice.
func testMemoryConcurrentCreate(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			_, err := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: "e", Observations: []string{fmt.Sprint("obs ", i), "shared"}}},
				[]core.Relation{{From: "e", To: fmt.Sprint("f", i%4), Type: "r"}})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	tr, err := s.MemoryTraverse(ctx, "ns", "e", "", 1)
	must(t, err)
	if len(tr.Entities) != 5 || len(tr.Relations) != 4 || len(tr.Entities[0].Observations) != 17 {
		t.Fatalf("after concurrent creates: %d entities, %d relations, %d observations", len(tr.Entities), len(tr.Relations), len(tr.Entities[0].Observations))
	}
}

// testListRunsCursor: runs created at the same moment are ordered by id,
// byte by byte (whatever the database's collation), and the cursor
// selects exactly the runs after it.
func testListRunsCursor(t *testing.T, h Harness) {
	clock := newStillClock()
	s := open(t, h, clock.now)
	ctx := context.Background()
	ids := []string{"b", "B", "a", "_x", "é", "Z", "a0", "a-"}
	for _, id := range ids {
		newRun(t, s, id) // the clock does not move: one creation time
	}
	clock.add(1)
	newRun(t, s, "later")
	all, err := s.ListRuns(ctx, store.Filter{})
	must(t, err)
	var got []string
	for _, r := range all {
		got = append(got, r.ID)
	}
	// "later" first (newest), then byte order: B Z _x a a- a0 b é.
	if want := "later,B,Z,_x,a,a-,a0,b,é"; strings.Join(got, ",") != want {
		t.Fatalf("order %s, want %s", strings.Join(got, ","), want)
	}
	for i := range all {
		page, err := s.ListRuns(ctx, store.Filter{Before: store.CursorOf(all[i]), Limit: 3})
		must(t, err)
		for j, r := range page {
			if r.ID != got[i+1+j] {
				t.Fatalf("after %s: %s at %d, want %s", got[i], r.ID, j, got[i+1+j])
			}
		}
		if want := min(3, len(all)-i-1); len(page) != want {
			t.Fatalf("after %s: %d runs, want %d", got[i], len(page), want)
		}
	}
}
