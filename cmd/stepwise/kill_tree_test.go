package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// treeCalls is how many slow tool calls the child of the kill tree makes.
const treeCalls = 4

// killTreeAgents writes a manager whose one call is a sub-agent (a child
// run, ADR 0034) that calls a slow, idempotent command tool treeCalls
// times, each appending its argument to $KILLTEST_LOG, and returns the
// manager's path.
func killTreeAgents(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var worker strings.Builder
	for i := 1; i <= treeCalls; i++ {
		fmt.Fprintf(&worker, `{"tool_calls": [{"id": "w%d", "name": "work", "arguments": {"x": "w%d"}}]}`+"\n", i, i)
	}
	worker.WriteString(`{"text": "the work is done"}` + "\n")
	files := map[string]string{
		"worker.jsonl": worker.String(),
		"worker.toml": `name = "worker"
system_prompt = "Work."
format = "native"
[models.primary]
provider = "script"
script = "worker.jsonl"
[[tools]]
name = "work"
command = ["sh", "-c", "sleep 0.05; echo {{x}} >> \"$KILLTEST_LOG\"; echo did {{x}}"]
env = ["KILLTEST_LOG"]
idempotent = true
parameters = '{"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}'
`,
		"boss.jsonl": `{"tool_calls": [{"id": "call_work", "name": "delegate", "arguments": {"task": "do the work"}}]}` + "\n" +
			`{"text": "the worker did it"}` + "\n",
		"boss.toml": `name = "boss"
system_prompt = "Delegate."
format = "native"
[models.primary]
provider = "script"
script = "boss.jsonl"
[[agents]]
name = "delegate"
file = "worker.toml"
description = "Give the worker a task."
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "boss.toml")
}

// treeRuns is every run of the database, by id, with its status and its
// last state's messages described.
func treeRuns(t *testing.T, db string) map[string]string {
	t.Helper()
	st, err := openDB(db, false, store.DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ri := range runs {
		rec, err := st.LoadLatest(ctx, ri.ID)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(string(ri.Status) + "\n")
		for _, m := range rec.State.Messages {
			b.WriteString(core.DescribeMessage(m) + "\n")
		}
		out[ri.ID] = b.String()
	}
	return out
}

// TestKill9AcrossASubAgentTree kills a real stepwise process with SIGKILL
// at random moments while it drives a run and its sub-agent's child run,
// resuming the root after each kill: every trial ends with the same two
// runs as an uninterrupted one (the child started once, under its derived
// id, never a second child), and no completed call of the child ran again.
func TestKill9AcrossASubAgentTree(t *testing.T) {
	agent := killTreeAgents(t)
	dir := t.TempDir()
	refDB := filepath.Join(dir, "ref.db")
	if out, err := stepwiseCmd(refDB, filepath.Join(dir, "ref.log"), "run", agent, "go").CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	ref := treeRuns(t, refDB)
	if len(ref) != 2 {
		t.Fatalf("the reference holds %d runs, want the root and its child", len(ref))
	}
	root := ""
	for id := range ref {
		if !strings.Contains(id, ".") {
			root = id
		}
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 26))
	t.Logf("seed %d", seed)
	const trials = 6
	kills := 0
	for trial := range trials {
		db, log := filepath.Join(dir, fmt.Sprintf("t%d.db", trial)), filepath.Join(dir, fmt.Sprintf("t%d.log", trial))
		trialKills := killUntilDone(t, rng, db, log, agent, 300*time.Millisecond)
		kills += trialKills
		got := treeRuns(t, db)
		for id, want := range ref {
			id = strings.Replace(id, root, strings.SplitN(runID(t, db), ".", 2)[0], 1)
			if got[id] != want {
				t.Fatalf("trial %d (%d kills): run %s:\n got:\n%s\nwant:\n%s", trial, trialKills, id, got[id], want)
			}
		}
		if len(got) != len(ref) {
			t.Fatalf("trial %d (%d kills): %d runs, want %d: %v", trial, trialKills, len(got), len(ref), slices.Sorted(maps.Keys(got)))
		}
		checkToolRuns(t, trial, log, "w", treeCalls, trialKills)
	}
	if kills == 0 {
		t.Fatal("no process was killed")
	}
	t.Logf("%d trials, %d kills", trials, kills)
}
