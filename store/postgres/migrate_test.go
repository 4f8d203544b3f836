package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

func TestMigrationsNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, schema version %d", len(ms), SchemaVersion())
	}
}

// TestMigrateConcurrentOpeners: stores opened at once on a new schema
// create it and migrate it once; the next open finds nothing to do.
func TestMigrateConcurrentOpeners(t *testing.T) {
	t.Parallel()
	s := openTest(t) // creates the schema; the others open it too
	exec(t, s, `DROP TABLE schema_migrations, runs, steps, segments, intents, agent_changes, tool_lists,
		mem_entities, mem_observations, mem_relations, mem_totals, tool_cache, idempotency, inbox, blobs CASCADE`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			o, err := Open(context.Background(), serverURL(t), &Options{Schema: s.Schema()})
			if err != nil {
				t.Error(err)
				return
			}
			o.Close()
		})
	}
	wg.Wait()
	var n, max int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != SchemaVersion() || max != SchemaVersion() {
		t.Fatalf("%d migrations recorded, max %d; want %d", n, max, SchemaVersion())
	}
	reopen(t, s, nil)
}

func TestMigrateNewer(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	exec(t, s, `INSERT INTO schema_migrations (version, name, applied_ns) VALUES ($1, 'future.sql', 0)`, SchemaVersion()+1)
	_, err := Open(context.Background(), serverURL(t), &Options{Schema: s.Schema()})
	if !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), s.Schema()) {
		t.Fatalf("open a newer database: %v", err)
	}
}

// TestOpen: a bad URL or an unreachable server fails Open; the default
// clock is the database's; the schema is created and used.
func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := Open(ctx, "postgres://%zz", nil); err == nil {
		t.Fatal("a bad URL opened")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := Open(cctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", nil); err == nil {
		t.Fatal("a closed port opened")
	}
	s := openWith(t, nil)
	var server time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if d := s.now().Sub(server); d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Fatalf("the store's clock is %v off the server's", d)
	}
	var schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil || schema != s.Schema() {
		t.Fatalf("current schema %q, want %q (%v)", schema, s.Schema(), err)
	}
}

// TestTestURL: an unreachable server is reported within about two
// seconds, with the reason.
func TestTestURL(t *testing.T) {
	t.Setenv("STEPWISE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
	start := time.Now()
	url, ok, why := TestURL()
	if ok || why == "" || !strings.Contains(url, ":1/") {
		t.Fatalf("a closed port: %q %v %q", url, ok, why)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}
