package storetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// testMemoryCreate: entities, observations and relations are upserted; only
// what changed is counted; a type changes but an empty one does not erase
// it; names and relation types are required; long text is kept.
func testMemoryCreate(t *testing.T, h Harness) {
	s := open(t, h, nil)
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

// testMemoryTraverse: breadth first from an entity, up to a depth, by one
// relation type or all; at each entity, relations by type then target in
// byte order; an unknown entity, or one of another namespace, is not found.
func testMemoryTraverse(t *testing.T, h Harness) {
	s := open(t, h, nil)
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

func names(es []core.Entity) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}
