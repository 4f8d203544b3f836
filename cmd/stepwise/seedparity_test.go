package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// inProcess runs the CLI in this process with db as its database.
func inProcessDB(t *testing.T, db string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "STEPWISE_DB" {
			return db
		}
		return ""
	}}
	code := e.main(args)
	return result{code, out.String(), errb.String()}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestValidatePrintsDefaultWarning: a tool schema as MCP servers write them,
// with a default that does not fit its type, is accepted with a warning
// that names it, and its docs do not offer the default.
func TestValidatePrintsDefaultWarning(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "search.toml", `name = "searcher"
format = "fenced"

[models.primary]
provider = "openai"
model = "gpt-4o-mini"

[[tools]]
name = "search"
mode = "external"
description = "Search the web."
parameters = '''{"type": "object", "properties": {"query": {"type": "string"}, "safe": {"type": "boolean", "default": "false", "description": "filter results"}}, "required": ["query"]}'''
`)
	db := filepath.Join(dir, "t.db")
	r := inProcessDB(t, db, "validate", path)
	want(t, r, 0, "validate")
	warning := path + `: warning: tool "search": parameters: properties.safe: default "false" is ignored: it does not fit the schema (expected a boolean, found the string "false")` + "\n"
	if r.stderr != warning {
		t.Errorf("stderr:\n got %q\nwant %q", r.stderr, warning)
	}
	if !strings.Contains(r.stdout, `: ok (agent "searcher", format fenced, 1 tools`) {
		t.Errorf("stdout: %q", r.stdout)
	}
	tl := inProcessDB(t, db, "tools", path)
	want(t, tl, 0, "tools")
	if tl.stderr != warning || !strings.Contains(tl.stdout, "  - safe (boolean, optional): filter results\n") || strings.Contains(tl.stdout, "default: \"false\"") {
		t.Errorf("tools:\nstdout: %s\nstderr: %s", tl.stdout, tl.stderr)
	}
}

// TestSummaryRunKeepsTheFullResult: an agent whose tool has a summary runs
// with the strict format; the model reads "Tool N [name]: summary", the
// store keeps the tool's whole output, and the run replays identically.
func TestSummaryRunKeepsTheFullResult(t *testing.T) {
	dir := t.TempDir()
	var items []string
	for i := range 40 {
		items = append(items, fmt.Sprintf(`{"title":"result %d %s"}`, i, strings.Repeat("x", 100)))
	}
	full := `{"results":[` + strings.Join(items, ",") + `],"total":40}`
	writeFile(t, dir, "search.jsonl", `{"text": "{\"tool\": \"search\", \"args\": {\"query\": \"solar\"}}"}`+"\n"+`{"text": "Found 40 results."}`+"\n")
	path := writeFile(t, dir, "search.toml", `name = "searcher"
format = "strict"

[models.primary]
provider = "script"
script = "search.jsonl"

[[tools]]
name = "search"
description = "Search the web."
command = ["printf", "%s", '`+full+`']
idempotent = true
max_result_bytes = 1000
summary = { items = 3, item_chars = 20, max_bytes = 900 }
parameters = '''{"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}'''
`)
	db := filepath.Join(dir, "t.db")
	r := inProcessDB(t, db, "run", path, "Search for solar panels", "--json")
	want(t, r, exitCompleted, "run")
	var o outcome
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || o.Answer != "Found 40 results." {
		t.Fatalf("outcome %q: %v", r.stdout, err)
	}

	s, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stored []core.ToolResult
	var last core.State
	err = s.Steps(context.Background(), o.RunID, func(rec store.StepRecord) error {
		if res, ok := rec.Result.(core.ToolResults); ok {
			stored = append(stored, res.Results...)
		}
		last = rec.State
		return nil
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].Output != full {
		t.Fatalf("the store keeps %d results; the first is %d bytes, want the whole %d", len(stored), len(stored[0].Output), len(full))
	}
	line := "Tool 1 [search]: results: 40 items, the first 3:\n" +
		"1. {\"title\":\"result 0 x…\n2. {\"title\":\"result 1 x…\n3. {\"title\":\"result 2 x…\ntotal: 40"
	var seen bool
	for _, m := range last.Messages {
		seen = seen || (m.Role == core.RoleUser && m.Content == line)
	}
	if !seen {
		t.Errorf("no message reads %q in:\n%s", line, describeMessages(last.Messages))
	}
	want(t, inProcessDB(t, db, "replay", o.RunID), 0, "replay")
}

func describeMessages(msgs []core.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(core.DescribeMessage(m) + "\n")
	}
	return b.String()
}
