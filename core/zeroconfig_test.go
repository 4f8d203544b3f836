package core_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// zeroConfigGolden holds, for generated runs, a digest of every action and
// continuation state the core produced before budgets, cycles, turns,
// collaboration and citations existed. Regenerate it only on purpose:
// go test ./core -run TestZeroConfigUnchanged -rewrite
const zeroConfigGolden = "testdata/zero_config.golden"

const zeroConfigRuns = 400

// TestZeroConfigUnchanged drives generated runs of configs that leave every
// newer option at its zero value, from fixed pseudo-random bytes, and checks
// that the core takes the same actions, with byte-identical states, as the
// core the golden file was written with. The one recorded difference is
// tools_used, which no longer lists a tool none of whose calls ran (a turn
// refused by the loop policy, calls skipped by stop-on-error): for runs
// that failed by the loop policy or stop on errors, the digest without
// tools_used must still match.
func TestZeroConfigUnchanged(t *testing.T) {
	lines := make([]string, 0, zeroConfigRuns)
	fixable := make([]bool, zeroConfigRuns) // a run the tools_used fix may change
	for i := range zeroConfigRuns {
		var line string
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			line = fmt.Sprintf("%d skip", i)
			rapid.MakeFuzz(func(rt *rapid.T) {
				cfg := coretest.Configs(coretest.AllFormats...).Draw(rt, "cfg")
				_, results := coretest.CheckRun(rt, cfg, "input")
				actions, err := coretest.Replay(cfg, "input", results)
				if err != nil {
					rt.Fatalf("replay: %v", err)
				}
				full, sans := sha256.New(), sha256.New()
				for _, a := range actions {
					full.Write(encodeAll(rt, a))
					sans.Write(encodeAll(rt, withoutToolsUsed(a)))
				}
				line = fmt.Sprintf("%d %s %s", i, hex.EncodeToString(full.Sum(nil)[:8]), hex.EncodeToString(sans.Sum(nil)[:8]))
				if cfg.Policy.StopOnError {
					line += " soe"
				}
				if f, ok := actions[len(actions)-1].(core.Fail); ok && f.Code == core.FailLoop || cfg.Policy.StopOnError {
					fixable[i] = true
				}
			})(t, zeroConfigBytes(i))
		})
		lines = append(lines, line)
	}
	got := strings.Join(lines, "\n") + "\n"
	if *rewrite {
		if err := os.WriteFile(zeroConfigGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(zeroConfigGolden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(want) != len(lines) {
		t.Fatalf("golden has %d runs, generated %d", len(want), len(lines))
	}
	ran, fixed := 0, 0
	for i := range lines {
		if lines[i] == want[i] {
			if !strings.HasSuffix(lines[i], "skip") {
				ran++
			}
			continue
		}
		g, w := strings.Fields(lines[i]), strings.Fields(want[i])
		if fixable[i] && len(g) >= 3 && len(w) >= 3 && g[2] == w[2] {
			fixed++ // only tools_used differs
			continue
		}
		t.Errorf("run %d: got %q, want %q", i, lines[i], want[i])
	}
	if ran < zeroConfigRuns/2 {
		t.Fatalf("only %d of %d generated runs were identical", ran, zeroConfigRuns)
	}
	t.Logf("%d runs identical, %d differ only in tools_used", ran, fixed)
}

// zeroConfigBytes is the fixed input of run i: a SHA-256 chain, long enough
// for any run the generators draw.
func zeroConfigBytes(i int) []byte {
	var out bytes.Buffer
	seed := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("stepwise zero config "), uint64(i)))
	for out.Len() < 64<<10 {
		out.Write(seed[:])
		seed = sha256.Sum256(seed[:])
	}
	return out.Bytes()
}

// withoutToolsUsed clears tools_used from an action and its state.
func withoutToolsUsed(a core.Action) core.Action {
	switch x := a.(type) {
	case core.Complete:
		x.ToolsUsed, x.State.ToolsUsed = nil, nil
		return x
	case core.Fail:
		x.State.ToolsUsed = nil
		return x
	case core.RequestModelCall:
		x.State.ToolsUsed = nil
		return x
	case core.RequestToolCalls:
		x.State.ToolsUsed = nil
		return x
	case core.RequestExternalToolCalls:
		x.State.ToolsUsed = nil
		return x
	case core.RequestMemorySearch:
		x.State.ToolsUsed = nil
		return x
	case core.RequestMemoryCreate:
		x.State.ToolsUsed = nil
		return x
	case core.RequestMemoryTraverse:
		x.State.ToolsUsed = nil
		return x
	}
	return a
}
