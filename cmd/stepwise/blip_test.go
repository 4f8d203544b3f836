package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// blipAgent writes an agent whose scripted model calls a non-idempotent
// tool once, then answers; the tool marks that it started, takes half a
// second, and journals its effect in dir.
func blipAgent(t *testing.T, dir string) string {
	return chargerAgent(t, dir, 1, `touch "$BLIP_DIR/started"; sleep 0.5; printf 'E %s\n' {{x}} >> "$BLIP_DIR/journal"; echo charged {{x}}`, "BLIP_DIR")
}

// runBlipped runs the agent through the proxy and cuts the proxy as soon
// as the tool starts, for cut (0: until the process exits).
func runBlipped(t *testing.T, db string, p *pgtest.Proxy, dir string, cut time.Duration) result {
	cmd := exec.Command(binary, "run", blipAgent(t, dir), "charge it", "--json")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "STEPWISE_DB="+db, "BLIP_DIR="+dir, "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	deadline := time.After(time.Minute)
wait:
	for {
		select {
		case err = <-exited:
			t.Fatalf("the run ended before its tool started: %v\n%s", err, errb.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("the tool did not start within a minute")
		case <-time.After(5 * time.Millisecond):
			if _, serr := os.Stat(filepath.Join(dir, "started")); serr == nil {
				break wait
			}
		}
	}
	p.Down()
	if cut > 0 {
		time.Sleep(cut)
		p.Up()
		err = <-exited
	} else {
		select {
		case err = <-exited:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("the run did not give up on an unreachable store within 2 minutes")
		}
		p.Up()
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func effects(t *testing.T, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatalf("the tool journaled no effect: %v", err)
	}
	return strings.Count(string(b), "E e1\n")
}

// TestBlipDuringToolCallStallsNotFails: PostgreSQL cut off for 2 s while a
// non-idempotent tool runs (its outcome write meets the outage): the run
// rides it out and completes (exit 0), the effect happened once, and the
// model never saw "outcome unknown".
func TestBlipDuringToolCallStallsNotFails(t *testing.T) {
	db, p := pgtest.Proxied(t)
	dir := t.TempDir()
	r := runBlipped(t, db, p, dir, 2*time.Second)
	want(t, r, exitCompleted)
	o := decodeOutcome(t, r)
	if o.Status != "completed" || o.Answer != "all charged" {
		t.Fatalf("outcome: %+v", o)
	}
	if n := effects(t, dir); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
	show := cli(t, db, "", "show", o.RunID)
	want(t, show, 0)
	if strings.Contains(show.stdout, "outcome unknown") || !strings.Contains(show.stdout, "charged e1") {
		t.Fatalf("show:\n%s", show.stdout)
	}
}

// TestLongOutageStallsAndResumes: PostgreSQL cut off from the tool's start
// until the run gives up: it stalls (exit 7, never 5), saying the store
// is unavailable and naming the outcome it knows but could not write;
// once the database is back, resume with that outcome completes the run
// with no second effect and no "outcome unknown".
func TestLongOutageStallsAndResumes(t *testing.T) {
	db, p := pgtest.Proxied(t)
	dir := t.TempDir()
	r := runBlipped(t, db, p, dir, 0)
	want(t, r, exitStalled)
	const marker = "(a results file for resume --results): "
	i := strings.Index(r.stderr, marker)
	if !strings.Contains(r.stderr, "the store is unavailable") || i < 0 {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	results := r.stderr[i+len(marker):]
	results = results[:strings.Index(results, "]")+1]
	var parsed []map[string]any
	if err := json.Unmarshal([]byte(results), &parsed); err != nil || len(parsed) != 1 || parsed[0]["tool_call_id"] != "c1" || parsed[0]["result"] != "charged e1\n" {
		t.Fatalf("the unwritten outcome %q: %v", results, err)
	}
	file := filepath.Join(dir, "results.json")
	os.WriteFile(file, []byte(results), 0o644)

	ls := cli(t, db, "", "ls", "--json")
	want(t, ls, 0)
	var listed struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(ls.stdout), &listed); err != nil || len(listed.Runs) != 1 {
		t.Fatalf("ls: %v\n%s", err, ls.stdout)
	}
	id := listed.Runs[0].ID
	res := cli(t, db, "", "resume", id, "--results", file, "--json")
	want(t, res, exitCompleted)
	if o := decodeOutcome(t, res); o.Status != "completed" || o.Answer != "all charged" {
		t.Fatalf("resumed: %+v", o)
	}
	if n := effects(t, dir); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
	show := cli(t, db, "", "show", id)
	if strings.Contains(show.stdout, "outcome unknown") || !strings.Contains(show.stdout, "charged e1") {
		t.Fatalf("show:\n%s", show.stdout)
	}
}

// TestStalledRunInShowAndLs: show and ls (text and --json) give a stalled
// run's reason, its stall count and its next try.
func TestStalledRunInShowAndLs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	o := decodeOutcome(t, cli(t, db, "", "run", "testdata/agents/external.toml", "Buy a desk lamp", "--json"))
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := st.Acquire(ctx, o.RunID, store.LeaseRequest{Owner: "test/1/x", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	retry := time.Now().Add(90 * time.Second)
	if err := st.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "the payments model is unavailable: 503", RetryAt: retry, StallAttempts: 4}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	st.Close()

	show := cli(t, db, "", "show", o.RunID)
	want(t, show, 0)
	if !strings.Contains(show.stdout, "stalled (stall 4 in a row; next try in 1m") || !strings.Contains(show.stdout, "): the payments model is unavailable: 503") {
		t.Fatalf("show:\n%s", show.stdout)
	}
	ls := cli(t, db, "", "ls")
	want(t, ls, 0)
	if !strings.Contains(ls.stdout, "NOTE") || !strings.Contains(ls.stdout, "stall 4 in a row; next try in 1m") || !strings.Contains(ls.stdout, "the payments model is unavailable: 503") {
		t.Fatalf("ls:\n%s", ls.stdout)
	}
	lsj := cli(t, db, "", "ls", "--json")
	want(t, lsj, 0)
	var listed struct {
		Runs []struct {
			Status        string `json:"status"`
			Reason        string `json:"reason"`
			RetryAt       string `json:"retry_at"`
			StallAttempts int    `json:"stall_attempts"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(lsj.stdout), &listed); err != nil || len(listed.Runs) != 1 {
		t.Fatalf("ls --json: %v\n%s", err, lsj.stdout)
	}
	if r := listed.Runs[0]; r.Status != "stalled" || r.StallAttempts != 4 || r.RetryAt != retry.UTC().Format(time.RFC3339) || r.Reason != "the payments model is unavailable: 503" {
		t.Fatalf("ls --json: %+v", r)
	}
	showj := cli(t, db, "", "show", o.RunID, "--json")
	if !strings.Contains(showj.stdout, `"stall_attempts":4`) {
		t.Fatalf("show --json:\n%s", showj.stdout)
	}
}
