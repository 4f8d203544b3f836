package main

import (
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
