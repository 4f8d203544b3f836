package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The recorded compaction replays identically against its agent, show
// marks where the history was compacted, and with a changed [context] the
// replay diverges at the first compaction.
func TestCompactionReplaysAndDivergesUnderAnotherPolicy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	want(t, cli(t, db, "", "import", "testdata/runs/compaction.json"), 0)
	rep := cli(t, db, "", "replay", "compaction")
	want(t, rep, exitCompleted)
	show := cli(t, db, "", "show", "compaction")
	for _, s := range []string{"compact helper summarize messages 2-5", "(compacted view of 9)", "compacted=2..13"} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	src, err := os.ReadFile("../../testdata/agents/compactor.toml")
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("../../testdata/scripts/compactor.jsonl")
	data, _ := filepath.Abs("../../testdata/data")
	changed := strings.NewReplacer("max_tokens = 900", "max_tokens = 1400", `"../scripts/compactor.jsonl"`, `"`+script+`"`, `"../data"`, `"`+data+`"`).Replace(string(src))
	agent := filepath.Join(t.TempDir(), "compactor.toml")
	if err := os.WriteFile(agent, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = cli(t, db, "", "replay", "compaction", "--agent", agent)
	want(t, rep, exitFailed)
	if !strings.Contains(rep.stdout, "diverges at step 7:") || !strings.Contains(rep.stdout, "recorded: compact helper summarize messages 2-5") {
		t.Fatalf("replay under another policy:\n%s", rep.stdout)
	}
}

// An agent with [output]: the answer that fits is printed as JSON and, with
// --json, given as "output"; show --step N --request shows what was asked.
func TestStructuredOutputThroughTheCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", "testdata/agents/classifier.toml", "WIN A PRIZE!!!", "--json")
	want(t, r, exitCompleted)
	var o struct {
		RunID  string          `json:"run_id"`
		Answer string          `json:"answer"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || o.Answer != `{"label":"spam","score":0.98}` || string(o.Output) != o.Answer {
		t.Fatalf("run --json: %v %s", err, r.stdout)
	}
	show := cli(t, db, "", "show", o.RunID)
	if !strings.Contains(show.stdout, "must be one JSON value that fits this JSON Schema") {
		t.Fatalf("show lacks the correction:\n%s", show.stdout)
	}
	script, _ := filepath.Abs("../../testdata/scripts/classifier.jsonl")
	bad := fmt.Sprintf("name = \"c\"\n[models.primary]\nprovider = \"script\"\nscript = %q\n[output]\nschema = '{\"type\": \"objec\"}'\n", script)
	path := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	v := cli(t, db, "", "validate", path)
	want(t, v, exitUsage)
	if !strings.Contains(v.stderr, "output.schema") {
		t.Fatalf("validate: %s", v.stderr)
	}
}

// The compacted request is what show --request prints.
func TestShowRequestOfACompactedStep(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	want(t, cli(t, db, "", "import", "testdata/runs/compaction.json"), 0)
	r := cli(t, db, "", "show", "compaction", "--step", "15", "--request")
	want(t, r, 0)
	for _, s := range []string{"Summary of the earlier conversation (compacted to fit the context)", `"content":"And the cheapest main?"`} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("the request lacks %q:\n%s", s, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "starter 1,starters") {
		t.Errorf("the request holds a page that was summarized:\n%s", r.stdout)
	}
}

// A fork at the compaction step with another summary goes on from there:
// the model is sent that summary in place of the recorded one.
func TestForkAtACompactionWithAnotherSummary(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	want(t, cli(t, db, "", "import", "testdata/runs/compaction.json"), 0)
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.json")
	script := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(summary, []byte(`{"text": "ANOTHER SUMMARY: pages 1-2 list starters and soups."}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(`{"text": "The cheapest dessert is dessert 1."}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := cli(t, db, "", "fork", "compaction", "--at", "7", "--result", summary, "--script", script, "--json")
	want(t, r, exitCompleted)
	o := decodeOutcome(t, r)
	req := cli(t, db, "", "show", o.RunID, "--step", "1", "--request")
	want(t, req, 0)
	if !strings.Contains(req.stdout, "ANOTHER SUMMARY") || strings.Contains(req.stdout, "Pages 1-2 of menu.txt") {
		t.Fatalf("the fork's request:\n%s", req.stdout)
	}
}
