//go:build unix

package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell/agent"
)

// Build honours its caller's context: with an MCP server that never
// answers initialize, Build returns the context's error soon after the
// deadline, and the server process is gone (killed and reaped).
func TestBuildHonoursContextDeadline(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(`{"text": "never asked"}`+"\n"), 0o644)
	src := `name = "hung"
[models.primary]
provider = "script"
script = "script.jsonl"
[[mcp]]
name = "hung"
command = "/bin/sh"
args = ["-c", "echo $$ > ` + pidFile + `; exec sleep 60"]
`
	spec, err := agent.Parse([]byte(src), "hung.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	const deadline = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	ag, err := spec.Build(ctx, agent.BuildOptions{})
	took := time.Since(start)
	t.Logf("Build: %v after %v", err, took)
	if err == nil {
		ag.Close()
		t.Fatal("Build returned an agent; want the context's error")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want one that wraps context.DeadlineExceeded", err)
	}
	if took < deadline || took > 5*time.Second {
		t.Errorf("Build took %v, want between the deadline (%v) and 5s", took, deadline)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the server never started: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	// The server is stopped before Build returns, perhaps reaped a moment
	// after: give it a second.
	for wait := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			break
		}
		if time.Now().After(wait) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server (pid %d) still runs after Build returned (kill 0: %v)", pid, err)
		}
	}
}
