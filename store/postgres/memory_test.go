package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
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
