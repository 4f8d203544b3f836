package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// TestSQLQueryThroughTheCLI: the binary wires SQLite into the sql_query
// tool (shell has no driver of its own), so an agent's query reads a real
// SQLite file, and a write is refused.
func TestSQLQueryThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "shop.db")
	db, err := sql.Open("sqlite3", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE lamps (name TEXT, price INTEGER); INSERT INTO lamps VALUES ('desk', 30), ('floor', 80)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	call := func(id, q string) string {
		args, _ := json.Marshal(map[string]string{"query": q})
		return `{"tool_calls": [{"id": "` + id + `", "name": "sql_query", "arguments": ` + string(args) + `}]}`
	}
	script := strings.Join([]string{
		call("q1", "SELECT name FROM lamps WHERE price < 50"),
		call("q2", "DELETE FROM lamps"),
		`{"text": "The desk lamp."}`,
	}, "\n") + "\n"
	os.WriteFile(filepath.Join(dir, "shop.jsonl"), []byte(script), 0o644)
	agentFile := filepath.Join(dir, "shop.toml")
	os.WriteFile(agentFile, []byte(`name = "shop"
format = "native"
[models.primary]
provider = "script"
script = "shop.jsonl"
[[tools]]
builtin = "sql_query"
path = "shop.db"
`), 0o644)
	r := cli(t, filepath.Join(dir, "runs.db"), "", "run", agentFile, "--json", "which lamp is cheap?")
	want(t, r, 0)
	o := decodeOutcome(t, r)
	if o.Status != "completed" || o.Answer != "The desk lamp." {
		t.Fatalf("outcome %+v", o)
	}
	shown := cli(t, filepath.Join(dir, "runs.db"), "", "show", o.RunID)
	want(t, shown, 0)
	for _, s := range []string{`desk`, `read-only`} {
		if !strings.Contains(shown.stdout, s) {
			t.Errorf("show does not say %q:\n%s", s, shown.stdout)
		}
	}
	if strings.Contains(shown.stdout, "not available") {
		t.Errorf("the CLI's sql_query has no SQLite:\n%s", shown.stdout)
	}
}
