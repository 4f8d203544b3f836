// Package pgtest finds the PostgreSQL server that tests outside
// store/postgres use (the CLI's, the bench's, the server's), and gives
// each test a schema of its own.
//
// The server is STEPWISE_TEST_POSTGRES (a URL), else the local one
// (postgres://postgres@127.0.0.1:5432/test). Where none answers, a test
// skips saying so, or fails when STEPWISE_REQUIRE_POSTGRES=1 (CI sets it,
// so that a missing server cannot pass unnoticed).
package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store/postgres"
)

// Required reports whether a missing server fails the tests.
func Required() bool { return os.Getenv("STEPWISE_REQUIRE_POSTGRES") == "1" }

// URL returns the test server's URL, or skips t (fails it, when
// required).
func URL(t testing.TB) string {
	t.Helper()
	url, ok, why := postgres.TestURL()
	if !ok {
		if Required() {
			t.Fatalf("STEPWISE_REQUIRE_POSTGRES=1 and no PostgreSQL server answers: %s", why)
		}
		t.Skipf("PostgreSQL NOT TESTED: no server answers (%s); set STEPWISE_TEST_POSTGRES to a URL", why)
	}
	return url
}

// SchemaURL returns the URL of a fresh schema on the test server (its
// search_path), dropped when t ends; it skips t as URL does.
func SchemaURL(t testing.TB) string {
	t.Helper()
	url := URL(t)
	s, cleanup, err := postgres.OpenTestSchema(context.Background(), url, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	schema := s.Schema()
	t.Cleanup(func() {
		if err := cleanup(); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}
