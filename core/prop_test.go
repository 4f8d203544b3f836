package core_test

import (
	"bytes"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// Every run ends within its limits, refuses every mismatched result without
// changing, survives crash-and-restore at any step, and keeps the invariants.
func TestPropRunsEndAndKeepInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs(coretest.AllFormats...).Draw(t, "cfg")
		final, _ := coretest.CheckRun(t, cfg, rapid.StringMatching(`[a-zA-Z ?]{0,30}`).Draw(t, "input"))
		if !final.Done() {
			t.Fatalf("not ended: %s", core.DescribeState(final))
		}
	})
}

// The same config and results give byte-identical actions and states.
func TestPropDeterminism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs(coretest.AllFormats...).Draw(t, "cfg")
		_, results := coretest.CheckRun(t, cfg, "input")
		a1, err1 := coretest.Replay(cfg, "input", results)
		a2, err2 := coretest.Replay(cfg, "input", results)
		if err1 != nil || err2 != nil {
			t.Fatalf("replay: %v / %v", err1, err2)
		}
		if len(a1) != len(a2) {
			t.Fatalf("replays took %d and %d actions", len(a1), len(a2))
		}
		for i := range a1 {
			if !bytes.Equal(encodeAll(t, a1[i]), encodeAll(t, a2[i])) {
				t.Fatalf("step %d differs: %s vs %s", i, core.DescribeAction(a1[i]), core.DescribeAction(a2[i]))
			}
		}
	})
}

func encodeAll(t *rapid.T, a core.Action) []byte {
	ab, err := core.EncodeAction(a)
	if err != nil {
		t.Fatalf("encode action: %v", err)
	}
	sb, err := core.EncodeState(a.Next())
	if err != nil {
		t.Fatalf("encode state: %v", err)
	}
	return append(ab, sb...)
}

// No sequence of results of any kind, fitting or not, makes the core panic.
func TestPropNoPanicOnAnyInput(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs(coretest.AllFormats...).Draw(t, "cfg")
		st, err := core.Start(cfg, core.Request{Input: "x"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatalf("Step on a reachable state: %v", err)
			}
			if a.Next().Done() {
				break
			}
			var res core.Result
			switch rapid.IntRange(0, 2).Draw(t, "source") {
			case 0:
				res = coretest.ResultFor(cfg, a).Draw(t, "fitting")
			case 1:
				res = coretest.Mismatched(a).Draw(t, "mismatched")
			default:
				res = rapid.SampledFrom([]core.Result{nil, core.ModelReply{}, core.ToolResults{}, core.MemoryHits{}, core.MemoryCreated{}, core.MemoryTraversed{}, core.Cancelled{}}).Draw(t, "any")
			}
			if next, err := core.Resume(cfg, a.Next(), res); err == nil {
				st = next
			} else {
				st = a.Next()
			}
		}
	})
}

// Decoding arbitrary bytes is an error or a valid state, never a panic.
func TestPropDecodeArbitraryBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")
		if st, err := core.DecodeState(b); err == nil {
			if _, err := core.Step(core.DefaultConfig(), st); err != nil {
				t.Fatalf("decoded state is not steppable: %v", err)
			}
		}
		_, _ = core.DecodeResult(b)
		_, _ = core.DecodeAction(b, core.State{})
	})
}

// runMachine is a state-machine test: steps, fitting and mismatched results,
// and crash-and-restore interleave freely; the invariants hold after each.
type runMachine struct {
	cfg     core.Config
	st      core.State
	pending core.Action // the action whose continuation is st, if any
	steps   int
}

func (m *runMachine) step(t *rapid.T) {
	if m.pending != nil {
		t.Skip("a request is pending")
	}
	a, err := core.Step(m.cfg, m.st)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	m.st, m.pending = a.Next(), a
	switch a.(type) {
	case core.Complete, core.Fail:
		m.pending = nil
	default:
		m.steps++
	}
}

func (m *runMachine) resume(t *rapid.T) {
	if m.pending == nil {
		t.Skip("nothing pending")
	}
	res := coretest.ResultFor(m.cfg, m.pending).Draw(t, "result")
	next, err := core.Resume(m.cfg, m.st, res)
	if err != nil {
		t.Fatalf("fitting result refused: %v", err)
	}
	m.st, m.pending = next, nil
}

func (m *runMachine) mismatch(t *rapid.T) {
	if m.pending == nil {
		t.Skip("nothing pending")
	}
	bad := coretest.Mismatched(m.pending).Draw(t, "bad")
	before, _ := core.EncodeState(m.st)
	got, err := core.Resume(m.cfg, m.st, bad)
	after, _ := core.EncodeState(got)
	if err == nil || !bytes.Equal(before, after) {
		t.Fatalf("mismatched %s: err=%v changed=%v", core.DescribeResult(bad), err, !bytes.Equal(before, after))
	}
}

func (m *runMachine) restore(t *rapid.T) {
	b, err := core.EncodeState(m.st)
	if err != nil {
		t.Fatal(err)
	}
	if m.st, err = core.DecodeState(b); err != nil {
		t.Fatal(err)
	}
	if m.pending != nil {
		// A crash: the shell reloads the checkpoint and asks Step again.
		a, err := core.Step(m.cfg, m.st)
		if err != nil || core.DescribeAction(a) != core.DescribeAction(m.pending) {
			t.Fatalf("restored state re-issues %s, want %s", core.DescribeAction(a), core.DescribeAction(m.pending))
		}
		m.pending = a
	}
}

func (m *runMachine) check(t *rapid.T) {
	if err := coretest.CheckState(m.cfg, m.st); err != nil {
		t.Fatal(err)
	}
	if m.steps > m.cfg.Limits.MaxSteps {
		t.Fatalf("%d steps taken with a limit of %d", m.steps, m.cfg.Limits.MaxSteps)
	}
}

func TestPropStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs(coretest.AllFormats...).Draw(t, "cfg")
		st, err := core.Start(cfg, core.Request{Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		m := &runMachine{cfg: cfg, st: st}
		t.Repeat(map[string]func(*rapid.T){
			"step":     m.step,
			"resume":   m.resume,
			"mismatch": m.mismatch,
			"restore":  m.restore,
			"":         m.check,
		})
	})
}
