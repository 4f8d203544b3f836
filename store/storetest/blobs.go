package storetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// What every run of an agent repeats is stored once (ADR 0035): its
// config and its instructions (the first message, a system message).

// sharedAgent is an agent config and instructions of a real agent's size,
// each holding a marker that occurs nowhere else.
func sharedAgent(v int) (config []byte, prompt string) {
	config = []byte(fmt.Sprintf(`{"toml":"name = \"support\"\nsystem_prompt = \"...\"\n# config-marker-%d\n%s"}`, v, strings.Repeat("# a line of the agent file\\n", 60)))
	prompt = "prompt-marker: You are the support agent. " + strings.Repeat("Follow the policy to the letter; ask before acting. ", 80)
	return config, prompt
}

// sharedInitial is the first state of run id of the shared agent.
func sharedInitial(id, prompt string) core.State {
	return BaseState("question "+id, []core.Message{
		{Role: core.RoleSystem, Content: prompt},
		{Role: core.RoleUser, Content: "question " + id},
	})
}

// testStoredOnce: three runs of one agent, one of them long enough for
// segments, one changed to another agent: each reads back its config, its
// start config, every state and every step as written, from this store
// and from another process's (cold caches); the export carries everything
// inline and imports into another store as the same run; and the store
// holds the config and the instructions once (Dump).
func testStoredOnce(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	config, prompt := sharedAgent(1)
	states := map[string][]core.State{}
	var leases []store.Lease
	for _, id := range []string{"a", "b", "c"} {
		st := sharedInitial(id, prompt)
		l, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "support", ConfigHash: "h", Config: config, Input: "question " + id,
			Initial: st, Owner: "test/1/" + id, LeaseTTL: time.Hour})
		must(t, err)
		leases = append(leases, l)
		states[id] = []core.State{st}
	}
	// Run a goes past two segments; b a few steps.
	for i, n := range []int{70, 3} {
		id := []string{"a", "b"}[i]
		log := states[id][0].Messages
		for seq := 1; seq <= n; seq++ {
			var cp store.Checkpoint
			cp, log = turnStep(log, seq, 100)
			must(t, s.Checkpoint(ctx, leases[i], cp))
			states[id] = append(states[id], cp.Action.Next())
		}
	}
	config2, _ := sharedAgent(2)
	must(t, s.ChangeAgent(ctx, leases[1], config2))

	check := func(what string, s store.Store) {
		t.Helper()
		for id, sts := range states {
			ri, err := s.Run(ctx, id)
			must(t, err)
			want := config
			if id == "b" {
				want = config2
			}
			if !bytes.Equal(ri.Config, want) || !bytes.Equal(ri.StartConfig, config) {
				t.Fatalf("%s: run %s's config reads %.40q, start %.40q", what, id, ri.Config, ri.StartConfig)
			}
			rec, err := s.LoadLatest(ctx, id)
			must(t, err)
			sameState(t, what+" latest of "+id, rec, len(sts)-1, sts[len(sts)-1])
			for _, seq := range []int{0, len(sts) / 2, len(sts) - 1} {
				rec, err := s.LoadStep(ctx, id, seq)
				must(t, err)
				sameState(t, what+" "+id, rec, seq, sts[seq])
			}
			seq := 0
			must(t, s.Steps(ctx, id, func(rec store.StepRecord) error {
				sameState(t, what+" steps of "+id, rec, seq, sts[seq])
				seq++
				return nil
			}))
		}
		changes, err := s.AgentChanges(ctx, "b")
		must(t, err)
		if len(changes) != 1 || !bytes.Equal(changes[0].Config, config2) {
			t.Fatalf("%s: run b's agent changes: %d", what, len(changes))
		}
	}
	check("this store", s)
	check("another process", reopen(t, h, s, nil))

	if d := dump(t, h, s); d != nil {
		for marker, want := range map[string]int{"config-marker-1": 1, "config-marker-2": 1, "prompt-marker": 1} {
			if n := bytes.Count(d, []byte(marker)); n != want {
				t.Errorf("the store holds %q %d times, want %d", marker, n, want)
			}
		}
	}

	// The export is self-contained: imported into another database, the
	// run reads the same, configs and instructions included.
	var exp bytes.Buffer
	must(t, s.Export(ctx, "b", &exp))
	dst := open(t, h, nil)
	if _, err := dst.Import(ctx, bytes.NewReader(exp.Bytes())); err != nil {
		t.Fatal(err)
	}
	if contents(t, s, "b") != contents(t, dst, "b") {
		t.Fatal("the imported run reads differently from the original")
	}
	ri, err := dst.Run(ctx, "b")
	must(t, err)
	if !bytes.Equal(ri.Config, config2) || !bytes.Equal(ri.StartConfig, config) {
		t.Fatalf("the imported run's config reads %.40q, start %.40q", ri.Config, ri.StartConfig)
	}
	rec, err := dst.LoadLatest(ctx, "b")
	must(t, err)
	sameState(t, "imported b", rec, len(states["b"])-1, states["b"][len(states["b"])-1])
	var again bytes.Buffer
	must(t, dst.Export(ctx, "b", &again))
	if !bytes.Equal(exp.Bytes(), again.Bytes()) {
		t.Fatal("export after import differs from the original export")
	}
}

// corruptBlobs: a body stored once that was damaged, or lost, is
// store.ErrCorrupt naming the run and step, from a cold cache; a run whose
// config's body was lost is store.ErrCorrupt naming the run, and does not
// read as another config (a changed agent's, as the one it started with).
func corruptBlobs(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, nil)
	config, prompt := sharedAgent(1)
	_, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "support", ConfigHash: "h", Config: config, Input: "q", Initial: sharedInitial("r", prompt)})
	must(t, err)
	// Run c starts with a small agent file, stored inline, and changes to
	// one stored by digest.
	small := []byte(`{"name": "small"}`)
	l, err := s.CreateRun(ctx, store.NewRun{ID: "c", Agent: "small", ConfigHash: "h", Config: small, Input: "q",
		Initial: sharedInitial("c", "short"), Owner: "test/1/c", LeaseTTL: time.Hour})
	must(t, err)
	config2, _ := sharedAgent(2)
	must(t, s.ChangeAgent(ctx, l, config2))
	if ri, err := reopen(t, h, s, nil).Run(ctx, "c"); err != nil || !bytes.Equal(ri.Config, config2) || !bytes.Equal(ri.StartConfig, small) {
		t.Fatalf("run c before the damage: %v", err)
	}
	damage(t, h, s, Damage{Kind: DamageBlobs, At: 7})
	_, err = reopen(t, h, s, nil).LoadStep(ctx, "r", 0)
	wantCorrupt(t, err, "run r step 0", "digest")
	damage(t, h, s, Damage{Kind: DamageBlobsGone})
	o := reopen(t, h, s, nil)
	_, err = o.LoadLatest(ctx, "r")
	wantCorrupt(t, err, "run r step 0", "missing")
	for _, id := range []string{"r", "c"} {
		ri, err := o.Run(ctx, id)
		if err == nil {
			t.Fatalf("run %s, whose config's body is lost, reads config %.40q", id, ri.Config)
		}
		wantCorrupt(t, err, "run "+id, "config")
	}
}
