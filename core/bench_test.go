package core_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
)

func benchConfig() core.Config {
	cfg := core.DefaultConfig()
	cfg.Name = "bench"
	cfg.Limits.MaxSteps = 1 << 30
	cfg.Limits.MaxStateBytes = 1 << 30
	cfg.Tools = []core.Tool{{Name: "echo", Parameters: []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}
	return cfg
}

var benchReplies = [2]core.ModelReply{
	{Calls: []core.NativeCall{{ID: "a", Name: "echo", Arguments: `{"text":"ping a"}`}}},
	{Calls: []core.NativeCall{{ID: "b", Name: "echo", Arguments: `{"text":"ping b"}`}}},
}

var benchOutput = strings.Repeat("x", 200)

// turn runs one model turn: the reply with one call, the tool request, its
// result, and the next model request.
func turn(tb testing.TB, cfg core.Config, st core.State, i int) core.State {
	st, err := core.Resume(cfg, st, benchReplies[i%2])
	if err != nil {
		tb.Fatal(err)
	}
	a, err := core.Step(cfg, st)
	if err != nil {
		tb.Fatal(err)
	}
	tc := a.(core.RequestToolCalls)
	st, err = core.Resume(cfg, a.Next(), core.ToolResults{Results: []core.ToolResult{{CallID: tc.Calls[0].ID, Output: benchOutput}}})
	if err != nil {
		tb.Fatal(err)
	}
	if a, err = core.Step(cfg, st); err != nil {
		tb.Fatal(err)
	}
	return a.Next()
}

// historyState is a state pending a model call with about n messages.
func historyState(tb testing.TB, cfg core.Config, n int) core.State {
	st, err := core.Start(cfg, core.Request{Input: "go"})
	if err != nil {
		tb.Fatal(err)
	}
	a, _ := core.Step(cfg, st)
	st = a.Next()
	for i := 0; len(st.Messages) < n; i++ {
		st = turn(tb, cfg, st, i)
	}
	// Decode a copy so the benchmark starts from a state as loaded from a store.
	b, _ := core.EncodeState(st)
	st, err = core.DecodeState(b)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

var historySizes = []int{10, 100, 1000}

// BenchmarkTurn measures one model turn (Resume+Step twice) on a history of n
// messages. The run continues from state to state as the shell does; every
// 256 turns it is reset (untimed) so the history stays near n.
func BenchmarkTurn(b *testing.B) {
	for _, n := range historySizes {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			cfg := benchConfig()
			base := historyState(b, cfg, n)
			st := base
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%256 == 255 {
					b.StopTimer()
					st = historyState(b, cfg, n)
					b.StartTimer()
				}
				st = turn(b, cfg, st, i)
			}
		})
	}
}

// BenchmarkStep measures deciding alone: Step on a state that just received
// a model reply with one call.
func BenchmarkStep(b *testing.B) {
	for _, n := range historySizes {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			cfg := benchConfig()
			st, err := core.Resume(cfg, historyState(b, cfg, n), benchReplies[0])
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := core.Step(cfg, st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeState(b *testing.B) {
	for _, n := range historySizes {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			st := historyState(b, benchConfig(), n)
			enc, _ := core.EncodeState(st)
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := core.EncodeState(st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeState(b *testing.B) {
	for _, n := range historySizes {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			enc, _ := core.EncodeState(historyState(b, benchConfig(), n))
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := core.DecodeState(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
