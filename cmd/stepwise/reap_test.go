package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reapAgent writes an agent whose scripted model makes the given tool calls,
// one per turn, then answers; extra is appended to the agent file.
func reapAgent(t *testing.T, extra string, calls ...string) string {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	for i, c := range calls {
		fmt.Fprintf(&script, `{"tool_calls": [{"id": "r%d", %s}]}`+"\n", i+1, c)
	}
	script.WriteString(`{"text": "done"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := `name = "reaptest"
system_prompt = "Work."
[models.primary]
provider = "script"
script = "script.jsonl"
` + extra
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// processesWith returns the processes whose argv holds marker.
func processesWith(marker string) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		if b, err := os.ReadFile(name); err == nil && bytes.Contains(b, []byte(marker)) {
			pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
			pids = append(pids, pid)
		}
	}
	return pids
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// childrenOf returns the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kid, _ := strconv.Atoi(strings.Split(name, "/")[2])
			kids = append(kids, kid)
		}
	}
	return kids
}

// eventually waits up to within for cond, failing with what otherwise.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
	}
}

// TestReapCommandToolOnKill9 kills stepwise with SIGKILL while a command
// tool runs that started processes in new sessions and orphaned ones: none
// of them outlives it.
func TestReapCommandToolOnKill9(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills what leaves the process group")
	}
	marker := fmt.Sprintf("300.%09d", rand.IntN(1e9))
	agent := reapAgent(t, fmt.Sprintf(`[[tools]]
name = "spawn"
command = ["bash", "-c", "setsid sleep %[1]s & ( (sleep %[1]s &) & ); setsid -f sleep %[1]s; sleep %[1]s & wait"]
timeout = "2m"
`, marker), `"name": "spawn", "arguments": {}`)
	db := filepath.Join(t.TempDir(), "t.db")
	cmd := stepwiseCmd(db, filepath.Join(t.TempDir(), "log"), "run", agent, "go")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck
	// bash -c, its child sleep, and three escapees.
	eventually(t, 20*time.Second, "the tool never started its processes", func() bool { return len(processesWith(marker)) == 5 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck
	eventually(t, 5*time.Second, "processes of the tool are left", func() bool { return len(processesWith(marker)) == 0 })
}

// TestReapMCPServerOnKill9 kills stepwise with SIGKILL while it holds a
// stdio MCP server that has started a child: both are gone soon after.
func TestReapMCPServerOnKill9(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills what a dead runner started")
	}
	marker := fmt.Sprintf("reap-%09d", rand.IntN(1e9))
	agent := reapAgent(t, fmt.Sprintf(`[[mcp]]
name = "t"
command = %q
args = [%q]
allow = ["spawn", "sleep"]
timeout = "2m"
`, mcpServer, marker), `"name": "t__spawn", "arguments": {}`, `"name": "t__sleep", "arguments": {"ms": 120000}`)
	db := filepath.Join(t.TempDir(), "t.db")
	cmd := stepwiseCmd(db, filepath.Join(t.TempDir(), "log"), "run", agent, "go")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck
	var server, child int
	eventually(t, 20*time.Second, "the server never started its child", func() bool {
		if servers := processesWith(marker); len(servers) == 1 {
			if kids := childrenOf(servers[0]); len(kids) == 1 {
				server, child = servers[0], kids[0]
				return true
			}
		}
		return false
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck
	eventually(t, 5*time.Second, fmt.Sprintf("the server (%d) or its child (%d) is left", server, child), func() bool {
		return !running(server) && !running(child)
	})
}
