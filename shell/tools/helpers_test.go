package tools

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// validCall checks args against the tool's schema the way the runner's core
// does and returns the canonical call.
func validCall(t *testing.T, tool shell.Tool, args string) core.ToolCall {
	t.Helper()
	c, err := checkCall(tool, args)
	if err != nil {
		t.Fatalf("core refused %s %s: %v", tool.Spec().Name, args, err)
	}
	return c
}

// checkCall validates args with the core and returns its verdict.
func checkCall(tool shell.Tool, args string) (core.ToolCall, error) {
	cfg := core.DefaultConfig()
	cfg.Tools = []core.Tool{tool.Spec()}
	if err := cfg.Validate(); err != nil {
		return core.ToolCall{}, err
	}
	return core.ValidateCall(cfg, core.NativeCall{ID: "call_1", Name: tool.Spec().Name, Arguments: args})
}

// run validates args with the core, then runs the tool.
func run(t *testing.T, tool shell.Tool, args string) core.ToolResult {
	t.Helper()
	return runWith(t, context.Background(), tool, args)
}

func runWith(t *testing.T, ctx context.Context, tool shell.Tool, args string) core.ToolResult {
	t.Helper()
	c := validCall(t, tool, args)
	res := tool.Run(ctx, c, shell.RunContext{RunID: "run-1", Step: 3, Agent: "tester"})
	if res.CallID != c.ID {
		t.Errorf("result call id %q, want %q", res.CallID, c.ID)
	}
	return res
}

// runRaw runs the tool on args the core never saw (defensive decoding).
func runRaw(tool shell.Tool, args string) core.ToolResult {
	return tool.Run(context.Background(), core.ToolCall{ID: "raw", Name: tool.Spec().Name, Args: []byte(args)}, shell.RunContext{})
}

func wantOutput(t *testing.T, res core.ToolResult, parts ...string) {
	t.Helper()
	if res.Error != "" {
		t.Fatalf("unexpected error: %s", res.Error)
	}
	for _, p := range parts {
		if !strings.Contains(res.Output, p) {
			t.Errorf("output lacks %q:\n%s", p, res.Output)
		}
	}
}

func wantError(t *testing.T, res core.ToolResult, parts ...string) {
	t.Helper()
	if res.Error == "" {
		t.Fatalf("want an error, got output:\n%s", res.Output)
	}
	for _, p := range parts {
		if !strings.Contains(res.Error, p) {
			t.Errorf("error lacks %q: %s", p, res.Error)
		}
	}
}

// needProgram skips the test when a program is not installed.
func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed; skipping", name)
	}
}

// waitGone fails the test unless process pid is gone (or a zombie nobody
// reaped) within a second.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return // gone
		}
		// The state follows the command name in parentheses.
		if s := string(b); strings.LastIndex(s, ")") > 0 {
			if st := strings.Fields(s[strings.LastIndex(s, ")")+1:]); len(st) > 0 && (st[0] == "Z" || st[0] == "X") {
				return // dead, waiting to be reaped by init
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var pidRE = regexp.MustCompile(`pid=(\d+)`)

// pidIn returns the number after "pid=" in s.
func pidIn(t *testing.T, s string) int {
	t.Helper()
	m := pidRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no pid= in %q", s)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
