package shell_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]shell.Rate{"30/min": {30, time.Minute}, "2/s": {2, time.Second}, " 5 / hour ": {5, time.Hour},
		"1/sec": {1, time.Second}, "100/h": {100, time.Hour}} {
		if got, err := shell.ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "30", "0/min", "-1/s", "3/day", "x/min", "1.5/s"} {
		if _, err := shell.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
	if s := (shell.Rate{N: 30, Per: time.Minute}).String(); s != "30/min" {
		t.Errorf("String = %s", s)
	}
}

// TestToolRate: two runs of one agent share a tool's rate of 2/s in this
// process: of 6 calls, the 3rd to 6th wait for their slots (so the last
// starts at least 2 s after the first), the observer is told of each wait,
// nothing fails, and no step records the wait.
func TestToolRate(t *testing.T) {
	db := openStore(t)
	var mu sync.Mutex
	var starts []time.Time
	tool := fnTool{spec: core.Tool{Name: "quota_api", Parameters: []byte(anyArgs), Idempotent: true},
		run: func(ctx context.Context, c core.ToolCall) core.ToolResult {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return core.ToolResult{CallID: c.ID, Output: "ok"}
		}}
	var waits atomic.Int32
	obs := observerFunc(func(e shell.Event) {
		if e.Kind == "rate" && strings.Contains(e.Text, "for its rate (2/s)") && e.Duration > 0 {
			waits.Add(1)
		}
	})
	runner := shell.NewRunner(db, &shell.Options{Observer: obs})
	var wg sync.WaitGroup
	for run := range 2 {
		wg.Go(func() {
			lines := []string{}
			for i := range 3 {
				lines = append(lines, fmt.Sprintf(`{"tool_calls": [{"id": "c%d_%d", "name": "quota_api", "arguments": {"x": "%d-%d"}}]}`, run, i, run, i))
			}
			lines = append(lines, `{"text": "done"}`)
			ag := newAgent(t, scripted(t, lines...), tool)
			ag.ToolSettings = map[string]shell.ToolSettings{"quota_api": {Rate: &shell.Rate{N: 2, Per: time.Second}}}
			out, err := runner.Start(context.Background(), ag, "go")
			if err != nil || out.Status != store.StatusCompleted {
				t.Errorf("run %d: %+v %v", run, out, err)
			}
		})
	}
	wg.Wait()
	if len(starts) != 6 {
		t.Fatalf("%d calls ran", len(starts))
	}
	first, last := starts[0], starts[0]
	for _, s := range starts {
		if s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	if d := last.Sub(first); d < 1900*time.Millisecond {
		t.Fatalf("6 calls at 2/s ran within %s", d)
	}
	if n := waits.Load(); n < 3 {
		t.Fatalf("the observer heard of %d waits, want at least 3", n)
	}
}
