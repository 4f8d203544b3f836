package sqlite

import (
	"context"
	"strings"
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

func TestMemorySearch(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	_, err := s.MemoryCreate(ctx, "ns", []core.Entity{
		{Name: "Paris", Type: "city", Observations: []string{"capital of France", "on the Seine"}},
		{Name: "Lyon", Type: "city", Observations: []string{"a city in France known for food, with a long history of silk weaving and many restaurants"}},
		{Name: "Berlin", Type: "city", Observations: []string{"capital of Germany"}},
		{Name: "Café de Flore", Type: "place", Observations: []string{"a café in Paris"}},
		{Name: "Tokyo", Type: "city", Observations: []string{"東京 capital of Japan"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MemoryCreate(ctx, "other", []core.Entity{{Name: "Paris", Observations: []string{"capital of France in another namespace"}}}, nil); err != nil {
		t.Fatal(err)
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
	if len(hits[0].Entity.Observations) != 2 || hits[0].Entity.Type != "city" || hits[0].Score <= 0 {
		t.Errorf("hit entity: %+v", hits[0])
	}
	if hits, _ := s.MemorySearch(ctx, "other", "capital", 10); hitNames(hits) != "Paris" || hits[0].Entity.Observations[0] != "capital of France in another namespace" {
		t.Errorf("namespace scoping: %+v", hits)
	}
	if hits, _ := s.MemorySearch(ctx, "none", "capital", 10); len(hits) != 0 {
		t.Errorf("empty namespace: %+v", hits)
	}
	// Queries that would be FTS syntax errors are just words.
	for _, q := range []string{`"`, `"capital`, `*`, `capital*`, `AND`, `capital AND`, `OR NOT`, `-capital`, `capital -France`,
		`NEAR(capital France)`, `col:capital`, `^capital`, `(`, `)`, `'`, ``, `   `, "\x00", `é`, `🙂`, `name:Paris`, `{capital}`, `"a""b"`} {
		if _, err := s.MemorySearch(ctx, "ns", q, 5); err != nil {
			t.Errorf("query %q: %v", q, err)
		}
	}
	if hits, _ := s.MemorySearch(ctx, "ns", `"capital" AND -"Japan*"`, 10); len(hits) == 0 {
		t.Errorf("hostile query found nothing")
	}
}

func TestQueryTerms(t *testing.T) {
	for q, want := range map[string]string{
		`"hello" world*`:       `"hello" OR "world"`,
		`AND or -x`:            `"AND" OR "or" OR "x"`,
		`Hello hello HELLO`:    `"Hello"`,
		`café 東京 a_b`:          `"café" OR "東京" OR "a" OR "b"`,
		`*** "" -- 🙂`:          ``,
		`it's foo's`:           `"it" OR "s" OR "foo"`,
		"tab\tnew\nline":       `"tab" OR "new" OR "line"`,
		`"unbalanced (paren`:   `"unbalanced" OR "paren"`,
		`NEAR(a b) x:y ^z`:     `"NEAR" OR "a" OR "b" OR "x" OR "y" OR "z"`,
		`e\u0301 combining`:    `"e" OR "u0301" OR "combining"`,
		"e\u0301 combining2":   "\"e\u0301\" OR \"combining2\"",
		`12 3.5 v2`:            `"12" OR "3" OR "5" OR "v2"`,
		strings.Repeat("w", 5): `"wwwww"`,
	} {
		if got := ftsQuery(queryTerms(q)); got != want {
			t.Errorf("%q: %s, want %s", q, got, want)
		}
	}
}
