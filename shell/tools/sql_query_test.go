package tools

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// The tests reach SQLite as the CLI does.
func init() { RegisterSQLite(SQLite{Open: sqlite.OpenQuery, Error: sqlite.QueryError}) }

// testDB creates a real SQLite file in dir with a small table.
func testDB(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "test.db")
	dsn, err := sqliteURI(path, "mode=rwc")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, score REAL, photo BLOB, note)`,
		`INSERT INTO people VALUES (1, 'Ada', 9.5, x'00ff10', NULL), (2, 'Linus', 7, NULL, 'héllo'), (3, 'Grace', NULL, 'text blob', 42)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func decodeSQL(t *testing.T, out string) sqlResult {
	t.Helper()
	var r sqlResult
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return r
}

func TestSQLQuery(t *testing.T) {
	t.Parallel()
	tool := SQLQuery(SQLQueryOptions{Path: testDB(t, t.TempDir())})
	res := run(t, tool, `{"query":"SELECT name, id, score, photo, note FROM people ORDER BY id"}`)
	want := `{"columns":["name","id","score","photo","note"],"rows":[` +
		`["Ada",1,9.5,"x'00ff10'",null],["Linus",2,7,null,"héllo"],["Grace",3,null,"text blob",42]],"truncated":false}`
	if res.Output != want || res.Error != "" {
		t.Errorf("got  %s (error %q)\nwant %s", res.Output, res.Error, want)
	}
	res = run(t, tool, `{"query":"SELECT count(*) AS n FROM people WHERE id > 5"}`)
	wantOutput(t, res, `{"columns":["n"],"rows":[[0]],"truncated":false}`)
	res = run(t, tool, `{"query":"SELECT * FROM people WHERE 0"}`)
	wantOutput(t, res, `"rows":[]`)
	res = run(t, tool, `{"query":"SELECT 1e999 AS big"}`)
	wantOutput(t, res, `[["+Inf"]]`)
	if !tool.Spec().Idempotent {
		t.Error("sql_query must be idempotent")
	}
}

func TestSQLQueryMaxRows(t *testing.T) {
	t.Parallel()
	tool := SQLQuery(SQLQueryOptions{Path: testDB(t, t.TempDir()), MaxRows: 2})
	r := decodeSQL(t, run(t, tool, `{"query":"SELECT id FROM people ORDER BY id"}`).Output)
	if !r.Truncated || len(r.Rows) != 2 || !strings.Contains(r.Note, "only the first 2 rows") {
		t.Errorf("got %+v", r)
	}
	r = decodeSQL(t, run(t, tool, `{"query":"SELECT id FROM people ORDER BY id LIMIT 2"}`).Output)
	if r.Truncated || len(r.Rows) != 2 {
		t.Errorf("exactly MaxRows rows: %+v", r)
	}
}

func TestSQLQueryReadOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := testDB(t, dir)
	tool := SQLQuery(SQLQueryOptions{Path: path})
	for _, q := range []string{
		`INSERT INTO people (name) VALUES ('Mallory')`,
		`UPDATE people SET name = 'x'`,
		`DELETE FROM people`,
		`DROP TABLE people`,
		`CREATE TABLE t (x)`,
		`PRAGMA query_only = 0; DELETE FROM people`,
		`SELECT 1; DELETE FROM people`,
		`ATTACH DATABASE '` + filepath.Join(dir, "other.db") + `' AS other`,
		`VACUUM INTO '` + filepath.Join(dir, "copy.db") + `'`,
	} {
		res := run(t, tool, `{"query":`+jsonString(q)+`}`)
		if res.Error == "" {
			t.Errorf("%s: accepted: %s", q, res.Output)
		}
	}
	r := decodeSQL(t, run(t, tool, `{"query":"SELECT count(*) FROM people"}`).Output)
	if len(r.Rows) != 1 || r.Rows[0][0] != json.Number("3") {
		t.Errorf("the table changed: %+v", r)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("files appeared next to the database: %v", ents)
	}
	wantError(t, run(t, tool, `{"query":"DELETE FROM people"}`), "the database is read-only")
	wantError(t, run(t, tool, `{"query":"ATTACH ':memory:' AS m"}`), "ATTACH (and VACUUM INTO) are disabled")
}

func TestSQLQueryErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tool := SQLQuery(SQLQueryOptions{Path: testDB(t, dir), Timeout: 200 * time.Millisecond})
	wantError(t, run(t, tool, `{"query":"SELEC nonsense"}`), "SQLite:", "syntax error")
	wantError(t, run(t, tool, `{"query":"SELECT * FROM nope"}`), "no such table: nope")
	start := time.Now()
	res := run(t, tool, `{"query":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT max(x) FROM c"}`)
	wantError(t, res, "did not finish within 200ms")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
	wantError(t, runRaw(tool, `{"query":"   "}`), "the query is empty")

	missing := filepath.Join(dir, "missing.db")
	wantError(t, run(t, SQLQuery(SQLQueryOptions{Path: missing}), `{"query":"SELECT 1"}`), "the database is unavailable")
	if _, err := os.Stat(missing); err == nil {
		t.Error("a missing database was created")
	}
	wantError(t, runRaw(SQLQuery(SQLQueryOptions{}), `{"query":"SELECT 1"}`), "misconfigured", "path is required")
}

// TestSQLQueryWithoutDriver: in a program that registered no SQLite
// driver, sql_query says so to the model. Not parallel: it swaps the
// registration, and the parallel tests run only after the others.
func TestSQLQueryWithoutDriver(t *testing.T) {
	path := testDB(t, t.TempDir())
	registered := sqliteDriver.Swap(nil)
	defer sqliteDriver.Store(registered)
	wantError(t, run(t, SQLQuery(SQLQueryOptions{Path: path}), `{"query":"SELECT 1"}`), "sql_query is not available", "RegisterSQLite")
}

func TestSQLQueryOddPath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a b?c#d%20e")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := testDB(t, dir)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	tool := SQLQuery(SQLQueryOptions{Path: path})
	wantOutput(t, run(t, tool, `{"query":"SELECT name FROM people WHERE id = 1"}`), `[["Ada"]]`)
}

func TestSQLQueryInterrupted(t *testing.T) {
	t.Parallel()
	tool := SQLQuery(SQLQueryOptions{Path: testDB(t, t.TempDir())})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	res := runWith(t, ctx, tool, `{"query":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT max(x) FROM c"}`)
	wantError(t, res, "interrupted")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
}
