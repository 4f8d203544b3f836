package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A sub-agent's pause surfaces at the root with a namespaced call id, is
// answered through the root, and the tree shows and replays (--deep);
// cancelling a paused root cancels its child.
func TestSubAgentTreeThroughTheCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", "testdata/agents/manager.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	o := decodeOutcome(t, r)
	if len(o.Pending) != 1 || o.Pending[0].ID != "call_research/call_ask" || o.Pending[0].Name != "ask_person" {
		t.Fatalf("the root's pause: %+v", o)
	}
	ls := cli(t, db, "", "ls", "--json")
	if !strings.Contains(ls.stdout, o.RunID+".call_research") || !strings.Contains(ls.stdout, `"id":"call_research/call_ask"`) {
		t.Fatalf("ls does not show the child and the root's namespaced pending call:\n%s", ls.stdout)
	}
	bad := cli(t, db, `[{"tool_call_id": "call_nope/call_ask", "result": "x"}]`, "resume", o.RunID, "--results", "-")
	want(t, bad, exitUsage)
	r = cli(t, db, "", "resume", o.RunID, "--results", "testdata/results/research.json", "--json")
	want(t, r, exitCompleted)
	if d := decodeOutcome(t, r); d.Answer != "We will buy the brass desk lamp, as the researcher found." {
		t.Fatalf("after answering through the root: %+v", d)
	}
	want(t, cli(t, db, "", "resume", o.RunID, "--results", "testdata/results/research.json"), exitUsage)
	show := cli(t, db, "", "show", o.RunID)
	if !strings.Contains(show.stdout, "sub-agent runs:\n  step 2 call call_research research -> "+o.RunID+".call_research (researcher, completed, 4 steps)") {
		t.Fatalf("show lacks the tree:\n%s", show.stdout)
	}
	rep := cli(t, db, "", "replay", o.RunID, "--deep")
	want(t, rep, exitCompleted)
	if !strings.Contains(rep.stdout, o.RunID+".call_research: 4 steps replayed, identical") {
		t.Fatalf("replay --deep:\n%s", rep.stdout)
	}
	// The tree travels: export --tree writes each node, import loads them
	// all, and the copy replays deep.
	dir := t.TempDir()
	ex := cli(t, db, "", "export", o.RunID, "--tree", dir)
	want(t, ex, 0)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 2 {
		t.Fatalf("export --tree wrote %v", files)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	want(t, cli(t, other, "", append([]string{"import"}, files...)...), 0)
	want(t, cli(t, other, "", "replay", o.RunID, "--deep"), exitCompleted)

	r = cli(t, db, "", "run", "testdata/agents/manager.toml", "Buy a lamp", "--json")
	want(t, r, exitPaused)
	id := decodeOutcome(t, r).RunID
	want(t, cli(t, db, "", "cancel", id), 0)
	child := cli(t, db, "", "show", id+".call_research", "--json")
	if !strings.Contains(child.stdout, `"status":"cancelled"`) {
		t.Fatalf("the child after cancelling the root:\n%s", child.stdout)
	}
}

// A handoff between two agent files: the run goes on with billing (an
// agent change show lists), then, at the user's next message, billing
// hands back; the run replays following the changes.
func TestHandoffThroughTheCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", "testdata/agents/frontdesk.toml", "Is invoice 42 paid?", "--json")
	want(t, r, exitCompleted)
	o := decodeOutcome(t, r)
	if o.Answer != "Invoice 42 is paid." {
		t.Fatalf("after the handoff: %+v", o)
	}
	r = cli(t, db, "", "say", o.RunID, "Thanks, back to the front desk please", "--json")
	want(t, r, exitCompleted)
	if a := decodeOutcome(t, r).Answer; a != "Back at the front desk: anything else?" {
		t.Fatalf("after the handback: %q", a)
	}
	show := cli(t, db, "", "show", o.RunID)
	if strings.Count(show.stdout, "agent changed after step") != 2 || !strings.Contains(show.stdout, "now with the billing agent") {
		t.Fatalf("show lacks the handoffs:\n%s", show.stdout)
	}
	want(t, cli(t, db, "", "replay", o.RunID), exitCompleted)
}
