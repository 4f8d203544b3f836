package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Helpers for tests and benchmarks, here and in other packages, that need a
// PostgreSQL server.

// defaultTestURL is the test server's URL when STEPWISE_TEST_POSTGRES is
// not set: a local server with trust authentication.
const defaultTestURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// TestURL returns the URL of the PostgreSQL server for tests (the
// environment's STEPWISE_TEST_POSTGRES, else
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable) and whether it
// answers within about two seconds; why says what failed when it does not.
func TestURL() (url string, ok bool, why string) {
	url = os.Getenv("STEPWISE_TEST_POSTGRES")
	if url == "" {
		url = defaultTestURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url, false, err.Error()
	}
	cfg.ConnectTimeout = 2 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return url, false, err.Error()
	}
	defer conn.Close(context.Background())
	if err := conn.Ping(ctx); err != nil {
		return url, false, err.Error()
	}
	return url, true, ""
}

// OpenTestSchema opens the store at url in a fresh schema named after name
// (its letters and digits, with a random suffix, so tests may run in
// parallel and again), and
// returns a cleanup that closes the store and drops the schema with
// everything in it. The store keeps the database's clock.
func OpenTestSchema(ctx context.Context, url, name string) (*Postgres, func() error, error) {
	return OpenTestSchemaOptions(ctx, url, name, nil)
}

// OpenTestSchemaOptions is OpenTestSchema with options (their Schema is
// replaced by the fresh one).
func OpenTestSchemaOptions(ctx context.Context, url, name string, opts *Options) (*Postgres, func() error, error) {
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, nil, err
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, name)
	schema := fmt.Sprintf("stepwise_test_%s_%s", clean, hex.EncodeToString(suffix[:]))
	if len(schema) > 63 { // PostgreSQL's limit on names
		schema = schema[:50] + "_" + hex.EncodeToString(suffix[:])
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Schema = schema
	s, err := Open(ctx, url, &o)
	if err != nil {
		_ = dropSchema(context.WithoutCancel(ctx), url, schema)
		return nil, nil, err
	}
	cleanup := func() error {
		s.Close()
		return dropSchema(context.Background(), url, schema)
	}
	return s, cleanup, nil
}

// dropSchema drops a schema and everything in it (a test's).
func dropSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	return err
}
