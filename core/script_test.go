package core_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of core/testdata/scripts")

// TestScripts runs the conversation scripts under testdata/scripts. Each
// block is a command, an optional body, "----" and the expected output: the
// core's own rendering of the action that follows (or the error). Commands:
//
//	config      body: the agent config as JSON
//	start       body: the user's input; prints the first action
//	reply       body: a ModelReply as JSON
//	results     body: a JSON array of tool results
//	hits        body: a JSON array of memory hits
//	created     body: a MemoryCreated as JSON
//	traversed   body: a MemoryTraversed as JSON
//	cancel      body: the reason
//	state       prints DescribeState
//	messages    prints the conversation, one message a line
//	last        prints the last message in full, each line after "| "
//	parse       prints what the parser noticed of the turn's reply (its warnings)
//
// Run `go test ./core -run TestScripts -rewrite` to regenerate the outputs.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

type block struct {
	cmd, body, want string
}

func parseScript(t *testing.T, text string) []block {
	var blocks []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); {
		if l := lines[i]; strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			i++
			continue
		}
		b := block{cmd: strings.TrimSpace(lines[i])}
		i++
		var body []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("command %q has no ---- line", b.cmd)
		}
		i++
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		b.body, b.want = strings.Join(body, "\n"), strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

func runScript(t *testing.T, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseScript(t, string(raw))
	var cfg core.Config
	var st core.State
	var out strings.Builder
	// Keep the leading comment of the file when rewriting.
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		out.WriteString(l + "\n")
	}
	failed := false
	for _, b := range blocks {
		got := runCommand(t, b, &cfg, &st)
		if got != b.want && !*rewrite {
			t.Errorf("%s: %s\n got: %s\nwant: %s", file, b.cmd, got, b.want)
			failed = true
		}
		fmt.Fprintf(&out, "\n%s\n", b.cmd)
		if b.body != "" {
			out.WriteString(b.body + "\n")
		}
		fmt.Fprintf(&out, "----\n%s\n", got)
	}
	if *rewrite && !failed {
		if err := os.WriteFile(file, []byte(strings.TrimLeft(out.String(), "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runCommand(t *testing.T, b block, cfg *core.Config, st *core.State) string {
	decode := func(v any) {
		if err := json.Unmarshal([]byte(b.body), v); err != nil {
			t.Fatalf("%s: bad body: %v", b.cmd, err)
		}
	}
	var res core.Result
	switch b.cmd {
	case "config":
		*cfg = core.Config{}
		decode(cfg)
		if err := cfg.Validate(); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "start":
		s, err := core.Start(*cfg, core.Request{Input: b.body})
		if err != nil {
			return "error: " + err.Error()
		}
		*st = s
		return step(cfg, st)
	case "state":
		return core.DescribeState(*st)
	case "messages":
		var lines []string
		for _, m := range st.Messages {
			lines = append(lines, core.DescribeMessage(m))
		}
		return strings.Join(lines, "\n")
	case "last":
		if len(st.Messages) == 0 {
			return "(no messages)"
		}
		m := st.Messages[len(st.Messages)-1]
		return "| " + strings.ReplaceAll(string(m.Role)+": "+m.Content, "\n", "\n| ")
	case "parse":
		if st.Turn == nil || st.Turn.Parse == nil || len(st.Turn.Parse.Warnings) == 0 {
			return "(no warnings)"
		}
		return "warning: " + strings.Join(st.Turn.Parse.Warnings, "\nwarning: ")
	case "reply":
		var r core.ModelReply
		decode(&r)
		res = r
	case "results":
		var r []core.ToolResult
		decode(&r)
		res = core.ToolResults{Results: r}
	case "hits":
		var r []core.MemoryHit
		decode(&r)
		res = core.MemoryHits{Hits: r}
	case "created":
		var r core.MemoryCreated
		decode(&r)
		res = r
	case "traversed":
		var r core.MemoryTraversed
		decode(&r)
		res = r
	case "cancel":
		res = core.Cancelled{Reason: b.body}
	default:
		t.Fatalf("unknown command %q", b.cmd)
	}
	next, err := core.Resume(*cfg, *st, res)
	if err != nil {
		return "error: " + err.Error()
	}
	*st = next
	return step(cfg, st)
}

func step(cfg *core.Config, st *core.State) string {
	a, err := core.Step(*cfg, *st)
	if err != nil {
		return "error: " + err.Error()
	}
	*st = a.Next()
	return core.DescribeAction(a)
}
