package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mcpAgent writes an agent that uses the project's MCP test server over
// stdio; its scripted model calls an MCP tool with valid arguments, then with
// invalid ones (refused by the core before reaching the server, corrected on
// the next turn), then an unknown tool, then answers.
func mcpAgent(t *testing.T, replies ...string) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(strings.Join(replies, "\n")+"\n"), 0o644)
	agent := fmt.Sprintf(`name = "mcp-user"
system_prompt = "Use the test server."
[models.primary]
provider = "script"
script = "script.jsonl"
[limits]
max_corrections = 2
[[mcp]]
name = "t"
command = %q
allow = ["add", "echo", "fail", "pid"]
timeout = "5s"
idempotent = true
`, mcpServer)
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(agent), 0o644)
	return path
}

func TestMCPToolsEndToEnd(t *testing.T) {
	agent := mcpAgent(t,
		`{"tool_calls": [{"id": "m1", "name": "t__add", "arguments": {"a": 40, "b": 2}}, {"id": "m2", "name": "t__pid", "arguments": {}}]}`,
		`{"tool_calls": [{"id": "m3", "name": "t__add", "arguments": {"a": "forty", "b": 2}}]}`,
		`{"tool_calls": [{"id": "m4", "name": "t__add", "arguments": {"a": 1, "b": 2}}, {"id": "m5", "name": "t__fail", "arguments": {"message": "nope"}}]}`,
		`{"tool_calls": [{"id": "m6", "name": "t__teleport", "arguments": {}}]}`,
		`{"text": "42, then 3"}`)
	db := filepath.Join(t.TempDir(), "t.db")

	tl := cli(t, db, "", "tools", agent)
	want(t, tl, 0)
	for _, s := range []string{"t__add (mcp, idempotent)", `"b":{"description":"the second addend","type":"integer"}`, "t__echo", "t__fail"} {
		if !strings.Contains(tl.stdout, s) {
			t.Errorf("tools lacks %q:\n%s", s, tl.stdout)
		}
	}
	if strings.Contains(tl.stdout, "t__sleep") {
		t.Errorf("the allow-list was not applied:\n%s", tl.stdout)
	}

	r := cli(t, db, "", "run", agent, "add things", "--json")
	want(t, r, 0)
	o := decodeOutcome(t, r)
	if o.Answer != "42, then 3" {
		t.Fatalf("%+v", o)
	}
	show := cli(t, db, "", "show", o.RunID, "--step", fmt.Sprint(o.Steps))
	want(t, show, 0)
	conv := show.stdout
	for _, s := range []string{
		"(t__add m1)\n    42",
		`argument "a": expected an integer, found the string "forty"`,
		"(t__add m4)\n    3",
		"(t__fail m5) error\n    nope",
		`unknown tool "t__teleport"`,
	} {
		if !strings.Contains(conv, s) {
			t.Errorf("conversation lacks %q:\n%s", s, conv)
		}
	}
	// The server was shut down: its pid no longer exists.
	i := strings.Index(conv, "(t__pid m2)\n    ")
	if i < 0 {
		t.Fatalf("no pid in:\n%s", conv)
	}
	var pid int
	fmt.Sscanf(conv[i+len("(t__pid m2)\n    "):], "%d", &pid)
	if pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
		t.Fatalf("MCP server %d still running after the run", pid)
	}
	// Replay needs no server: the tool list is recorded in the run.
	want(t, cli(t, db, "", "replay", o.RunID), 0)
}
