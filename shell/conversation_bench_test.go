package shell_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// lookupModel answers a conversation's turns: a user message gets a call of
// lookup, its result an answer.
type lookupModel struct{}

func (lookupModel) Complete(_ context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if strings.HasPrefix(req.Messages[0].Content, "You compact") {
		return core.ModelReply{Text: "The user asked the time, turn after turn; it was looked up each time.", Usage: core.Usage{PromptTokens: 900, CompletionTokens: 20}}, nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == core.RoleTool {
		return core.ModelReply{Text: "It is " + last.Content + ".", Usage: core.Usage{PromptTokens: 200, CompletionTokens: 8}}, nil
	}
	return core.ModelReply{Calls: []core.NativeCall{{ID: fmt.Sprintf("call_%d", req.Call), Name: "lookup", Arguments: `{"x":"the time"}`}},
		Usage: core.Usage{PromptTokens: 180, CompletionTokens: 12}}, nil
}

// BenchmarkConversation holds a conversation of 100 user turns on SQLite
// (the durability the CLI defaults to), each turn a user message sent with
// Runner.Say, a tool call and an answer (four steps), and compares its last
// 16 turns with its first 16: the bytes the store holds per step (step
// rows and segments; 16 turns are 64 steps, one segment period, so each
// window holds one segment copy) and the time per step, and the time to
// load the latest state at turn 16 and at turn 100: by a store opened
// afresh (first-load@N-ns, which decodes the whole log), and again by the
// store that drove the conversation (load@N-ns, the mean of 50 loads, which
// its log cache serves; x-load is load@100 over load@16). ns/op is one
// whole conversation. The targets (issue 23): at most 1.1x the bytes and
// 1.2x the time per step, loading again flat (x-load at most 1.2). In the
// compacted case the agent holds its requests to 1,500 tokens and each
// result is 1.5 KB, so the history is compacted every few turns (summaries
// recorded as steps): its bytes per step must stay flat too (issue 25).
func BenchmarkConversation(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchConversation(b, nil, "half past ten on a Thursday in late November") })
	b.Run("compacted", func(b *testing.B) {
		benchConversation(b, &core.ContextPolicy{MaxTokens: 1500, KeepTurns: 2}, strings.Repeat("half past ten on a Thursday; ", 50))
	})
}

func benchConversation(b *testing.B, bound *core.ContextPolicy, output string) {
	const turns, window = 100, 16
	ctx := context.Background()
	var firstB, lastB, firstT, lastT, load16, load100, cold16, cold100 float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "conv.db")
		db, err := sqlite.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		lookup := fnTool{spec: core.Tool{Name: "lookup", Parameters: []byte(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
			return core.ToolResult{CallID: c.ID, Output: output}
		}}
		cfg := core.DefaultConfig()
		cfg.Name = "conversation"
		cfg.Tools = []core.Tool{lookup.Spec()}
		cfg.Context = bound
		ag := &shell.Agent{Config: cfg, Models: map[core.ModelRole]shell.ModelProvider{core.Primary: lookupModel{}}, Tools: map[string]shell.Tool{"lookup": lookup}, Source: []byte(`{}`)}
		r := shell.NewRunner(db, nil)
		size := func(id string) float64 {
			var n int64
			if err := raw.QueryRow(`SELECT
				(SELECT coalesce(sum(length(body)), 0) FROM steps WHERE rk = (SELECT rk FROM runs WHERE id = ?1)) +
				(SELECT coalesce(sum(length(body)), 0) FROM segments WHERE rk = (SELECT rk FROM runs WHERE id = ?1))`, id).Scan(&n); err != nil {
				b.Fatal(err)
			}
			return float64(n)
		}
		// timeLoad times the first load of the latest state by a store
		// opened afresh on the file (as a new process's: it reads and
		// decodes the whole log), and the mean of 50 loads by the store
		// that drove the conversation, after one untimed load (a process
		// that loads the run again: its cache holds the log).
		timeLoad := func(id string) (first, again float64) {
			const n = 50
			fresh, err := sqlite.Open(path, &sqlite.Options{MustExist: true})
			if err != nil {
				b.Fatal(err)
			}
			defer fresh.Close()
			start := time.Now()
			if _, err := fresh.LoadLatest(ctx, id); err != nil {
				b.Fatal(err)
			}
			first = float64(time.Since(start).Nanoseconds())
			for i := range n + 1 {
				if i == 1 {
					start = time.Now()
				}
				if _, err := db.LoadLatest(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
			return first, float64(time.Since(start).Nanoseconds()) / n
		}
		b.StartTimer()
		out, err := r.Start(ctx, ag, "What time is it?")
		if err != nil || out.Status != "completed" {
			b.Fatalf("turn 1: %+v %v", out, err)
		}
		var sizeAt [turns + 1]float64
		var stepsAt [turns + 1]int
		var took [turns + 1]time.Duration
		sizeAt[1], stepsAt[1] = size(out.RunID), out.Steps
		for turn := 2; turn <= turns; turn++ {
			start := time.Now()
			out, err = r.Say(ctx, ag, out.RunID, fmt.Sprintf("And now (%d)?", turn))
			took[turn] = time.Since(start)
			if err != nil || out.Status != "completed" {
				b.Fatalf("turn %d: %+v %v", turn, out, err)
			}
			b.StopTimer()
			sizeAt[turn], stepsAt[turn] = size(out.RunID), out.Steps
			if turn == window {
				c, l := timeLoad(out.RunID)
				cold16, load16 = cold16+c, load16+l
			}
			b.StartTimer()
		}
		b.StopTimer()
		c, l := timeLoad(out.RunID)
		cold100, load100 = cold100+c, load100+l
		perStep := func(from, to int) (bytes, ns float64) {
			var d time.Duration
			for t := from + 1; t <= to; t++ {
				d += took[t]
			}
			steps := float64(stepsAt[to] - stepsAt[from])
			return (sizeAt[to] - sizeAt[from]) / steps, float64(d.Nanoseconds()) / steps
		}
		fb, ft := perStep(1, 1+window)
		lb, lt := perStep(turns-window, turns)
		firstB, firstT, lastB, lastT = firstB+fb, firstT+ft, lastB+lb, lastT+lt
		raw.Close()
		db.Close()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(firstB/n, "first16-B/step")
	b.ReportMetric(lastB/n, "last16-B/step")
	b.ReportMetric(lastB/firstB, "x-bytes")
	b.ReportMetric(firstT/n, "first16-ns/step")
	b.ReportMetric(lastT/n, "last16-ns/step")
	b.ReportMetric(lastT/firstT, "x-time")
	b.ReportMetric(load16/n, "load@16-ns")
	b.ReportMetric(load100/n, "load@100-ns")
	b.ReportMetric(load100/load16, "x-load")
	b.ReportMetric(cold16/n, "first-load@16-ns")
	b.ReportMetric(cold100/n, "first-load@100-ns")
}
