package core_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// cycleOracle is the definition of a cycle, written plainly: the shortest
// p in 2..maxPeriod such that the last repeats*p entries are repeats
// copies of one block of p entries that are not all the same.
func cycleOracle(seq []string, maxPeriod, repeats int) int {
	for p := 2; p <= maxPeriod; p++ {
		if len(seq) < p*repeats {
			break
		}
		tail := seq[len(seq)-p*repeats:]
		block := strings.Join(tail[:p], "\x00")
		same := true
		for r := 1; r < repeats; r++ {
			if strings.Join(tail[r*p:(r+1)*p], "\x00") != block {
				same = false
			}
		}
		allEqual := true
		for _, s := range tail[:p] {
			allEqual = allEqual && s == tail[0]
		}
		if same && !allEqual {
			return p
		}
	}
	return 0
}

// CyclePeriod agrees with the definition on any sequence over a small
// alphabet (where cycles are common).
func TestPropCyclePeriodIsTheDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seq := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c"}), 0, 24).Draw(t, "seq")
		period := rapid.IntRange(2, 6).Draw(t, "max-period")
		repeats := rapid.IntRange(2, 4).Draw(t, "repeats")
		for n := range len(seq) + 1 {
			if got, want := core.CyclePeriod(seq[:n], period, repeats), cycleOracle(seq[:n], period, repeats); got != want {
				t.Fatalf("CyclePeriod(%v) = %d, want %d", seq[:n], got, want)
			}
		}
	})
}

// cyclic draws an acyclic prefix, then a block of p distinct calls (names
// the prefix never uses) repeated k times: the cycle is complete at call
// len(prefix)+k*p, and not before.
func cyclic(t *rapid.T, maxPeriod, repeats int) (seq []string, at, period int) {
	prefix := acyclic(t, maxPeriod, "x")
	period = rapid.IntRange(2, maxPeriod).Draw(t, "period")
	block := rapid.Permutation([]string{"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"}).Draw(t, "block")[:period]
	seq = prefix
	for range repeats {
		seq = append(seq, block...)
	}
	return seq, len(prefix) + repeats*period, period
}

// acyclic draws calls each unlike the maxPeriod calls before it, so no
// block of calls ever repeats right after itself.
func acyclic(t *rapid.T, maxPeriod int, prefix string) []string {
	n := rapid.IntRange(0, 12).Draw(t, "acyclic-len")
	var seq []string
	for range n {
		recent := seq[max(0, len(seq)-maxPeriod):]
		var choices []string
		for i := range maxPeriod + 2 {
			if name := fmt.Sprintf("%s%d", prefix, i); !slices.Contains(recent, name) {
				choices = append(choices, name)
			}
		}
		seq = append(seq, rapid.SampledFrom(choices).Draw(t, "call"))
	}
	return seq
}

// A generated cycle is detected exactly at the call that completes its
// Repeats-th round, and at no call before.
func TestPropCycleDetectedAtDocumentedStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxPeriod := rapid.IntRange(2, 6).Draw(t, "max-period")
		repeats := rapid.IntRange(2, 4).Draw(t, "repeats")
		seq, at, period := cyclic(t, maxPeriod, repeats)
		for n := 1; n < at; n++ {
			if p := core.CyclePeriod(seq[:n], maxPeriod, repeats); p != 0 {
				t.Fatalf("detected period %d at call %d of %v, before the cycle completes at %d", p, n, seq, at)
			}
		}
		if p := core.CyclePeriod(seq[:at], maxPeriod, repeats); p != period {
			t.Fatalf("at call %d of %v: period %d, want %d", at, seq, p, period)
		}
	})
}

// An acyclic sequence is never detected.
func TestPropAcyclicNeverDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxPeriod := rapid.IntRange(2, 6).Draw(t, "max-period")
		repeats := rapid.IntRange(2, 4).Draw(t, "repeats")
		seq := acyclic(t, maxPeriod, "x")
		for n := range len(seq) + 1 {
			if p := core.CyclePeriod(seq[:n], maxPeriod, repeats); p != 0 {
				t.Fatalf("detected period %d in acyclic %v", p, seq[:n])
			}
		}
	})
}

// cycleAgent has a tool for every name the generators use, no arguments.
func cycleAgent(maxPeriod, repeats int) core.Config {
	cfg := core.Config{Name: "cycler", Models: core.Models{Primary: "m"}, Cycles: &core.Cycles{MaxPeriod: maxPeriod, Repeats: repeats}}
	for _, prefix := range []string{"x", "b"} {
		for i := range 8 {
			cfg.Tools = append(cfg.Tools, core.Tool{Name: fmt.Sprintf("%s%d", prefix, i)})
		}
	}
	return cfg
}

// driveCalls runs cfg with a model that makes the calls of seq one per
// reply (and then, if the run goes on, answers), every call returning a
// different output. It returns the index of the call whose reply the model
// was told about (-1 if none) and the final action.
func driveCalls(t *rapid.T, cfg core.Config, seq []string) (told int, final core.Action) {
	st, err := core.Start(cfg, core.Request{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	told, next, out := -1, 0, 0
	for {
		a, err := core.Step(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		var res core.Result
		switch a := a.(type) {
		case core.Complete, core.Fail:
			return told, a
		case core.RequestModelCall:
			last := a.Messages[len(a.Messages)-1]
			if strings.Contains(last.Content, "go round a cycle") && told < 0 {
				told = next - 1
			}
			if next == len(seq) {
				res = core.ModelReply{Text: "done"}
				break
			}
			args, _ := json.Marshal(map[string]any{})
			res = core.ModelReply{Calls: []core.NativeCall{{ID: fmt.Sprint("c", next), Name: seq[next], Arguments: string(args)}}}
			next++
		case core.RequestToolCalls:
			var rs []core.ToolResult
			for _, c := range a.Calls {
				out++
				rs = append(rs, core.ToolResult{CallID: c.ID, Output: fmt.Sprint("output ", out)})
			}
			res = core.ToolResults{Results: rs}
		default:
			t.Fatalf("unexpected %s", core.DescribeAction(a))
		}
		if st, err = core.Resume(cfg, a.Next(), res); err != nil {
			t.Fatal(err)
		}
	}
}

// Through Step and Resume: the model is told at the call that completes a
// cycle (which is not run), and a run that goes round the cycle once more
// fails with FailCycle at that next call.
func TestPropCycleToldOnceThenFails(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxPeriod := rapid.IntRange(2, 5).Draw(t, "max-period")
		repeats := rapid.IntRange(2, 3).Draw(t, "repeats")
		seq, at, period := cyclic(t, maxPeriod, repeats)
		// After being told, the model repeats the refused call: the cycle
		// is complete again at once.
		seq = append(seq, seq[at-1])
		cfg := cycleAgent(maxPeriod, repeats)
		cfg.Limits.MaxSteps = 1000
		told, final := driveCalls(t, cfg, seq)
		if told != at-1 {
			t.Fatalf("told at call %d of %v, want %d", told, seq, at-1)
		}
		f, ok := final.(core.Fail)
		if !ok || f.Code != core.FailCycle || !strings.Contains(f.Reason, fmt.Sprintf("cycle of %d calls", period)) {
			t.Fatalf("final %s, want a cycle of %d", core.DescribeAction(final), period)
		}
	})
}

// Through Step and Resume, an acyclic run is never told and completes.
func TestPropAcyclicRunNeverTold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxPeriod := rapid.IntRange(2, 5).Draw(t, "max-period")
		repeats := rapid.IntRange(2, 3).Draw(t, "repeats")
		seq := acyclic(t, maxPeriod, "x")
		cfg := cycleAgent(maxPeriod, repeats)
		cfg.Limits.MaxSteps = 1000
		told, final := driveCalls(t, cfg, seq)
		if _, ok := final.(core.Complete); !ok || told >= 0 {
			t.Fatalf("acyclic %v: told at %d, final %s", seq, told, core.DescribeAction(final))
		}
	})
}
