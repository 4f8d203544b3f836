package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// liveAgent writes an agent whose MCP tables are mcp (the test server's path
// is %[1]q in them) and whose scripted model answers replies in turn.
func liveAgent(t *testing.T, mcp string, replies ...string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(strings.Join(replies, "\n")+"\n"), 0o644)
	agent := `name = "mcp-live"
system_prompt = "Use the test server."
[models.primary]
provider = "script"
script = "script.jsonl"
` + fmt.Sprintf(mcp, mcpServer)
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(agent), 0o644)
	return path
}

// An optional server that cannot start leaves its tools out: the run goes
// on with the others, the model is told in the system prompt, and the run
// replays. A required one (the default) still stops the run before it
// starts.
func TestMCPServerThatCannotStart(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	os.WriteFile(marker, nil, 0o644) // the server refuses to start
	tables := `[[mcp]]
name = "t"
command = %[1]q
allow = ["add"]
[[mcp]]
name = "gone"
command = %[1]q
args = ["-start-once", "` + marker + `"]
`
	replies := []string{`{"tool_calls": [{"id": "m1", "name": "t__add", "arguments": {"a": 1, "b": 2}}]}`, `{"text": "3"}`}
	db := filepath.Join(t.TempDir(), "t.db")

	r := cli(t, db, "", "run", liveAgent(t, tables, replies...), "add", "--json")
	if r.code == 0 || !strings.Contains(r.stderr, "refusing to start again") {
		t.Fatalf("a required server that cannot start: exit %d\n%s", r.code, r.stderr)
	}

	r = cli(t, db, "", "run", liveAgent(t, tables+"required = false\n", replies...), "add", "--json")
	want(t, r, 0)
	o := decodeOutcome(t, r)
	if o.Answer != "3" || !strings.Contains(r.stderr, "mcp server gone is unavailable, its tools are left out") {
		t.Fatalf("outcome %+v\nstderr: %s", o, r.stderr)
	}
	show := cli(t, db, "", "show", o.RunID, "--step", fmt.Sprint(o.Steps))
	want(t, show, 0)
	if note := `The tools of the MCP server "gone" are unavailable in this run: it could not be started.`; !strings.Contains(show.stdout, note) {
		t.Fatalf("the conversation does not tell the model:\n%s", show.stdout)
	}
	want(t, cli(t, db, "", "replay", o.RunID), 0)
}

// An optional server that dies for good mid-run: its idempotent call is
// retried, finds the server gone and fails for good (no stall), its tools
// are withdrawn from the run's next step on, recorded as an agent change,
// so the model's next call of one is refused; and the run replays.
func TestMCPServerThatDiesMidRun(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started") // the server starts once
	agent := liveAgent(t, `[[mcp]]
name = "t"
command = %[1]q
args = ["-start-once", "`+marker+`"]
allow = ["crash", "echo"]
idempotent = true
required = false
`,
		`{"tool_calls": [{"id": "m1", "name": "t__crash", "arguments": {}}]}`,
		`{"tool_calls": [{"id": "m2", "name": "t__echo", "arguments": {"text": "hi"}}]}`,
		`{"text": "the server is gone"}`)
	db := filepath.Join(t.TempDir(), "t.db")
	r := cli(t, db, "", "run", agent, "go")
	want(t, r, 0)
	if !strings.Contains(r.stderr, "agent       tools changed: -t__crash, -t__echo") {
		t.Fatalf("no agent change in the progress:\n%s", r.stderr)
	}
	ls := cli(t, db, "", "ls", "--json")
	id := between(ls.stdout, `"id":"`, `"`)
	show := cli(t, db, "", "show", id)
	want(t, show, 0)
	for _, s := range []string{
		`results m1 error "mcp server t is unavailable, its tools are withdrawn: `,
		`unknown tool \"t__echo\"`,
		"agent changed after step 2",
		"status completed",
	} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	want(t, cli(t, db, "", "replay", id), 0)
}

// A call's progress notifications show on stderr while it runs.
func TestMCPProgressShown(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	agent := liveAgent(t, `[[mcp]]
name = "t"
command = %[1]q
allow = ["progress"]
`,
		fmt.Sprintf(`{"tool_calls": [{"id": "m1", "name": "t__progress", "arguments": {"steps": 4, "wait_for": %q}}]}`, release),
		`{"text": "done"}`)
	db := filepath.Join(t.TempDir(), "t.db")
	cmd := exec.Command(binary, "run", agent, "go")
	cmd.Env = append(os.Environ(), "STEPWISE_DB="+db, "NO_COLOR=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck
	// The call holds its answer until the last report is shown.
	var lines []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "tool t__progress: 100% — step 4 of 4") {
			break
		}
	}
	os.WriteFile(release, nil, 0o644)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, strings.Join(lines, "\n"))
	}
	got := strings.Join(lines, "\n")
	for _, s := range []string{"progress    tool t__progress: 25% — step 1 of 4", "progress    tool t__progress: 75% — step 3 of 4", "t__progress#m1 ok"} {
		if !strings.Contains(got, s) {
			t.Errorf("stderr lacks %q:\n%s", s, got)
		}
	}
	if strings.TrimSpace(stdout.String()) != "done" {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
