package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

func names(es []core.Entity) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}

func hitNames(hs []core.MemoryHit) string {
	var es []core.Entity
	for _, h := range hs {
		es = append(es, h.Entity)
	}
	return names(es)
}

func TestMemoryCreate(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	got, err := s.MemoryCreate(ctx, "ns", []core.Entity{
		{Name: "Alice", Type: "person", Observations: []string{"likes tea", "lives in Paris"}},
		{Name: "Acme", Type: "company"},
	}, []core.Relation{{From: "Alice", To: "Acme", Type: "works_at"}, {From: "Alice", To: "Bob", Type: "knows"}})
	if err != nil {
		t.Fatal(err)
	}
	want := core.MemoryCreated{Entities: []string{"Alice", "Acme", "Bob"}, Relations: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("created %+v, want %+v", got, want)
	}
	// Again, with one new observation and a known relation: only the change counts.
	got, err = s.MemoryCreate(ctx, "ns", []core.Entity{
		{Name: "Alice", Observations: []string{"likes tea", "plays chess"}},
		{Name: "Acme", Type: "company"},
	}, []core.Relation{{From: "Alice", To: "Acme", Type: "works_at"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (core.MemoryCreated{Entities: []string{"Alice"}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("second create %+v, want %+v", got, want)
	}
	tr, err := s.MemoryTraverse(ctx, "ns", "Alice", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	alice := tr.Entities[0]
	if alice.Type != "person" || !reflect.DeepEqual(alice.Observations, []string{"likes tea", "lives in Paris", "plays chess"}) {
		t.Fatalf("alice: %+v", alice)
	}
	if bob := tr.Entities[1]; bob.Name != "Bob" || bob.Type != "" || bob.Observations != nil {
		t.Fatalf("a bare entity: %+v", bob)
	}
	// A type changes; an empty one does not erase it.
	if got, _ := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: "Acme", Type: "firm"}, {Name: "Alice"}}, nil); !reflect.DeepEqual(got.Entities, []string{"Acme"}) {
		t.Fatalf("type change: %+v", got)
	}
	if _, err := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: " "}}, nil); err == nil {
		t.Error("entity without a name accepted")
	}
	if _, err := s.MemoryCreate(ctx, "ns", nil, []core.Relation{{From: "a", To: "b"}}); err == nil {
		t.Error("relation without a type accepted")
	}
	// Long text (past what a b-tree index entry holds) is stored.
	long := strings.Repeat("a long observation ", 1000)
	if _, err := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: strings.Repeat("N", 5000), Observations: []string{long, long}}}, nil); err != nil {
		t.Fatal(err)
	}
	tr, err = s.MemoryTraverse(ctx, "ns", strings.Repeat("N", 5000), "", 1)
	if err != nil || len(tr.Entities[0].Observations) != 1 || tr.Entities[0].Observations[0] != long {
		t.Fatalf("long text: %v", err)
	}
}

// TestMemoryConcurrentCreate: writers of one namespace serialize, so
// observations appended at once to one entity are numbered without gaps
// or losses, in some order.
func TestMemoryConcurrentCreate(t *testing.T) {
	t.Parallel()
	s := openTest(t)
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
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entities) != 5 || len(tr.Relations) != 4 || len(tr.Entities[0].Observations) != 17 {
		t.Fatalf("after concurrent creates: %d entities, %d relations, %d observations", len(tr.Entities), len(tr.Relations), len(tr.Entities[0].Observations))
	}
	var gaps int
	if err := s.pool.QueryRow(ctx, `SELECT max(ord) - count(*) FROM mem_observations`).Scan(&gaps); err != nil || gaps != 0 {
		t.Fatalf("observation numbers have %d gaps (%v)", gaps, err)
	}
}

func TestMemoryTraverseDepth(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	// a -> b -> c -> d, a -> e (other type), b -> a (cycle)
	_, err := s.MemoryCreate(ctx, "ns", nil, []core.Relation{
		{From: "a", To: "b", Type: "next"}, {From: "b", To: "c", Type: "next"}, {From: "c", To: "d", Type: "next"},
		{From: "a", To: "e", Type: "other"}, {From: "b", To: "a", Type: "next"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel   string
		depth int
		want  string
		rels  int
	}{
		{"next", 1, "a,b", 1},
		{"next", 2, "a,b,c", 3},
		{"next", 3, "a,b,c,d", 4},
		{"next", 9, "a,b,c,d", 4},
		{"", 1, "a,b,e", 2},
		{"", 0, "a,b,e", 2},
	} {
		got, err := s.MemoryTraverse(ctx, "ns", "a", c.rel, c.depth)
		if err != nil {
			t.Fatal(err)
		}
		if names(got.Entities) != c.want || len(got.Relations) != c.rels {
			t.Errorf("traverse %q depth %d: %s with %d relations, want %s with %d", c.rel, c.depth, names(got.Entities), len(got.Relations), c.want, c.rels)
		}
	}
	got, _ := s.MemoryTraverse(ctx, "ns", "a", "next", 2)
	wantRels := []core.Relation{{From: "a", To: "b", Type: "next"}, {From: "b", To: "a", Type: "next"}, {From: "b", To: "c", Type: "next"}}
	if !reflect.DeepEqual(got.Relations, wantRels) {
		t.Errorf("relations in BFS order: %+v", got.Relations)
	}
	if _, err := s.MemoryTraverse(ctx, "ns", "zz", "", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown entity: %v", err)
	}
	if _, err := s.MemoryTraverse(ctx, "other", "a", "", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("entity of another namespace: %v", err)
	}
	// At each entity, relations by type then target, byte order.
	if _, err := s.MemoryCreate(ctx, "ord", nil, []core.Relation{
		{From: "x", To: "b", Type: "t"}, {From: "x", To: "B", Type: "t"}, {From: "x", To: "a", Type: "T"}, {From: "x", To: "é", Type: "t"},
	}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.MemoryTraverse(ctx, "ord", "x", "", 1)
	if names(got.Entities) != "x,a,B,b,é" {
		t.Errorf("order at an entity: %s", names(got.Entities))
	}
}

// memoryFixture is memory the search tests store (here, and in SQLite to
// compare).
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

// memoryQueries are the queries the search tests run.
var memoryQueries = []string{
	"capital France", "paris", "PARIS river", "cafe", "CAFÉ", "naive", "東京", "nothing matches", "city", "capital",
	`"capital" AND -"Japan*"`, "Paris paris PARIS", "café cafe", "the of a in",
}

func TestMemorySearch(t *testing.T) {
	t.Parallel()
	s := openTest(t)
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

func TestFTSWords(t *testing.T) {
	for text, want := range map[string]string{
		"Café de Flore":          "cafe de flore",
		"NAÏVE coffee, crème":    "naive coffee creme",
		"e\u0301 combining":      "e combining",
		"東京 capital":             "東京 capital",
		"Ελληνικά κείμενο":       "ελληνικά κείμενο",
		"a_b a-b a.b 3.5 v2":     "a b a b a b 3 5 v2",
		"it's, \"quoted\" (x)":   "it s quoted x",
		"Straße ÅNGSTRÖM ½ ²":    "straße angstrom ½ ²",
		"":                       "",
		"  \t\n ":                "",
		"nul\x00between":         "nul between",
		"\xff invalid \xfe utf8": "invalid utf8",
	} {
		if got := strings.Join(ftsWords(text), " "); got != want {
			t.Errorf("ftsWords(%q) = %q, want %q", text, got, want)
		}
	}
	if got := tsvector([]string{"b", "a", "b", "it's", `back\slash`}); got != `'b':1,3 'a':2 'it''s':4 'back\\slash':5` {
		t.Errorf("tsvector: %s", got)
	}
}
