package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/internal/pgtest"
)

// pgDB returns the URL of a fresh schema on the test PostgreSQL server
// (see internal/pgtest).
func pgDB(t *testing.T) string { return pgtest.SchemaURL(t) }

// TestPostgresRunPauseResume: the CLI on a postgres:// URL runs, pauses,
// resumes, replays, shows and lists as on SQLite.
func TestPostgresRunPauseResume(t *testing.T) {
	db := pgDB(t)
	r := cli(t, db, "", "run", "testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	o := decodeOutcome(t, r)
	if o.Status != "awaiting_tool_results" || len(o.Pending) != 1 || o.Pending[0].ID != "call_approve" {
		t.Fatalf("paused outcome = %+v", o)
	}
	r = cli(t, db, "", "resume", o.RunID, "--results", "testdata/results/approve.json", "--json")
	want(t, r, exitCompleted)
	if o = decodeOutcome(t, r); o.Status != "completed" || !strings.Contains(o.Answer, "desk lamp") {
		t.Fatalf("completed outcome = %+v", o)
	}
	want(t, cli(t, db, "", "replay", o.RunID), exitCompleted)
	show := cli(t, db, "", "show", o.RunID)
	want(t, show, 0)
	if !strings.Contains(show.stdout, `results call_approve ok "approved by Dana"`) {
		t.Errorf("show:\n%s", show.stdout)
	}
	ls := cli(t, db, "", "ls", "--status", "completed", "--json")
	want(t, ls, 0)
	if !strings.Contains(ls.stdout, o.RunID) {
		t.Errorf("ls lacks the run:\n%s", ls.stdout)
	}
	// An unreachable server is a clear error, not a SQLite file of that
	// name, and the URL's password is not in it.
	bad := cli(t, "postgres://nobody:pw-sekrit@127.0.0.1:1/none?connect_timeout=2", "", "ls")
	if bad.code != exitInternal || !strings.Contains(bad.stderr, "open store") || strings.Contains(bad.stderr, "pw-sekrit") {
		t.Fatalf("unreachable server: exit %d: %s", bad.code, bad.stderr)
	}
}

// TestExportAcrossStoresCLI: a run exported from SQLite, imported into
// PostgreSQL, exported again and imported into another SQLite file exports
// byte for byte as it did first, and replays on each.
func TestExportAcrossStoresCLI(t *testing.T) {
	pg := pgDB(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	o := decodeOutcome(t, cli(t, a, "", "run", "testdata/agents/analyst.toml", "cost?", "--json"))
	first := cli(t, a, "", "export", o.RunID)
	want(t, first, 0)
	file := filepath.Join(dir, "run.json")
	os.WriteFile(file, []byte(first.stdout), 0o644)
	want(t, cli(t, pg, "", "import", file), 0)
	want(t, cli(t, pg, "", "replay", o.RunID), 0)
	fromPG := cli(t, pg, "", "export", o.RunID)
	want(t, fromPG, 0)
	if fromPG.stdout != first.stdout {
		t.Fatal("the export from PostgreSQL differs from the export from SQLite")
	}
	os.WriteFile(file, []byte(fromPG.stdout), 0o644)
	want(t, cli(t, b, "", "import", file), 0)
	want(t, cli(t, b, "", "replay", o.RunID), 0)
	if again := cli(t, b, "", "export", o.RunID); again.stdout != first.stdout {
		t.Fatal("SQLite -> PostgreSQL -> SQLite changed the export")
	}
}

// TestRacingResumersOnPostgres: the racing resumers' trials on PostgreSQL:
// one process runs the charge and completes the run, the others exit 6.
func TestRacingResumersOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 80 processes")
	}
	raceResumers(t, 10, func(int) string { return pgDB(t) })
}
