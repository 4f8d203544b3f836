package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// brokenAgent calls a tool that fails, then answers.
const brokenAgent = `name = "breaker"
[models.primary]
provider = "script"
script = "broken.jsonl"
[[tools]]
name = "broken"
command = ["sh", "-c", "exit 3"]
`

const brokenScript = `{"tool_calls": [{"id": "x1", "name": "broken", "arguments": {}}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
{"text": "it failed", "usage": {"prompt_tokens": 9, "completion_tokens": 2}}
`

// TestStatsCountsTheCallsOfScriptedRuns builds a real SQLite database by
// running scripted agents, then counts: per tool, calls and errors; per
// agent, runs, steps, model calls and tokens; latencies in order. The
// filters select runs as ls does, and the output is the same each time.
func TestStatsCountsTheCallsOfScriptedRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "broken.jsonl"), []byte(brokenScript), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.toml"), []byte(brokenAgent), 0o644)
	vars := map[string]string{"STEPWISE_DB": filepath.Join(dir, "s.db")}
	run := func(code int, args ...string) outcome {
		t.Helper()
		r := inproc(t, vars, "", append(args, "--json")...)
		want(t, r, code, args...)
		return decodeOutcome(t, r)
	}
	analyst := run(0, "run", "../../testdata/agents/analyst.toml", "cost?")
	run(0, "run", "../../testdata/agents/analyst.toml", "cost again?")
	looper := run(exitFailed, "run", "../../testdata/agents/looper.toml", "Weather in Oslo?")
	shopper := run(exitPaused, "run", "../../testdata/agents/external.toml", "Buy a desk lamp")
	run(0, "resume", shopper.RunID, "--results", "../../testdata/results/approve.json")
	run(0, "run", filepath.Join(dir, "broken.toml"), "break it")

	stats := func(args ...string) stats {
		t.Helper()
		r := inproc(t, vars, "", append([]string{"stats", "--json"}, args...)...)
		want(t, r, 0, args...)
		var s stats
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
			t.Fatalf("stats --json: %v\n%s", err, r.stdout)
		}
		return s
	}
	all := stats()
	if all.Runs != 5 {
		t.Fatalf("%d runs, want 5", all.Runs)
	}
	tools := map[string][2]int{}
	var order []string
	for _, tl := range all.Tools {
		tools[tl.Name] = [2]int{tl.Calls, tl.Errors}
		order = append(order, tl.Name)
		if tl.Latency.P50 <= 0 || tl.Latency.P50 > tl.Latency.P95 || tl.Latency.P95 > tl.Latency.Max {
			t.Errorf("tool %s latencies out of order: %+v", tl.Name, tl.Latency)
		}
	}
	wantTools := map[string][2]int{"add": {2, 0}, "approve_purchase": {1, 0}, "broken": {1, 1}, "list_files": {2, 0}, "read_file": {3, 0}, "weather": {2, 0}}
	if len(tools) != len(wantTools) || strings.Join(order, ",") != "add,approve_purchase,broken,list_files,read_file,weather" {
		t.Errorf("tools %v, want %v in name order", tools, wantTools)
	}
	for name, w := range wantTools {
		if tools[name] != w {
			t.Errorf("tool %s: calls, errors = %v, want %v", name, tools[name], w)
		}
	}
	type agentWant struct{ runs, steps, model, prompt, completion int }
	wantAgents := map[string]agentWant{
		"analyst": {2, 16, 8, 0, 0}, "breaker": {1, 4, 2, 14, 3}, "looper": {1, 6, 3, 0, 0}, "shopper": {1, 6, 3, 520, 54},
	}
	var agentOrder []string
	for _, a := range all.Agents {
		agentOrder = append(agentOrder, a.Name)
		if g := (agentWant{a.Runs, a.Steps, a.ModelCalls, a.Tokens.Prompt, a.Tokens.Completion}); g != wantAgents[a.Name] {
			t.Errorf("agent %s: %+v, want %+v", a.Name, g, wantAgents[a.Name])
		}
		if a.ModelLatency.P50 <= 0 || a.ModelLatency.Max < a.ModelLatency.P95 || a.RunDuration.P50 <= 0 || a.RunDuration.Max < a.ModelLatency.Max {
			t.Errorf("agent %s latencies: model %+v, run %+v", a.Name, a.ModelLatency, a.RunDuration)
		}
	}
	if strings.Join(agentOrder, ",") != "analyst,breaker,looper,shopper" {
		t.Errorf("agents in the order %v", agentOrder)
	}

	for _, c := range []struct {
		args   []string
		runs   int
		agents string
	}{
		{[]string{"--agent", "analyst"}, 2, "analyst"},
		{[]string{"--status", "failed"}, 1, "looper"},
		{[]string{looper.RunID, analyst.RunID}, 2, "analyst,looper"},
		{[]string{looper.RunID, analyst.RunID, "--agent", "looper"}, 1, "looper"},
		{[]string{"--since", "1h"}, 5, "analyst,breaker,looper,shopper"},
		{[]string{"--since", time.Now().Add(time.Hour).Format(time.RFC3339)}, 0, ""},
	} {
		s := stats(c.args...)
		var names []string
		for _, a := range s.Agents {
			names = append(names, a.Name)
		}
		if s.Runs != c.runs || strings.Join(names, ",") != c.agents {
			t.Errorf("stats %v: %d runs of %v, want %d of %s", c.args, s.Runs, names, c.runs, c.agents)
		}
	}

	first := inproc(t, vars, "", "stats", "--json")
	if again := inproc(t, vars, "", "stats", "--json"); again.stdout != first.stdout {
		t.Error("two stats of the same runs differ")
	}
	text := inproc(t, vars, "", "stats")
	want(t, text, 0)
	for _, s := range []string{"5 run(s)", "TOOL", "broken", "AGENT", "shopper", "520+54"} {
		if !strings.Contains(text.stdout, s) {
			t.Errorf("the table lacks %q:\n%s", s, text.stdout)
		}
	}
	for _, args := range [][]string{{"--status", "odd"}, {"--since", "yesterday"}, {"--since", "-1h"}, {"no-such-run"}} {
		r := inproc(t, vars, "", append([]string{"stats"}, args...)...)
		if r.code != exitUsage || r.stderr == "" {
			t.Errorf("stats %v: %+v", args, r)
		}
	}
}

// TestPercentilesAreNearestRank pins the percentile rule.
func TestPercentilesAreNearestRank(t *testing.T) {
	ms := func(list ...int) []time.Duration {
		out := make([]time.Duration, len(list))
		for i, v := range list {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		in            []time.Duration
		p50, p95, max float64
	}{
		{nil, 0, 0, 0},
		{ms(7), 7, 7, 7},
		{ms(1, 2), 1, 2, 2},
		{ms(4, 1, 3, 2), 2, 4, 4},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 10, 19, 20},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21), 11, 20, 21},
	} {
		if got := latencyOf(c.in); got != (latencies{c.p50, c.p95, c.max}) {
			t.Errorf("latencyOf(%v) = %+v, want %v %v %v", c.in, got, c.p50, c.p95, c.max)
		}
	}
}
