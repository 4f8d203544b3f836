package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestSummarize(t *testing.T) {
	edison := Summary{Items: 3, ItemChars: 200, MaxBytes: 900}
	for _, tc := range []struct {
		name string
		out  string
		s    Summary
		want string
	}{
		{"array, top K of N", `["alpha","beta","gamma","delta"]`, Summary{Items: 2},
			"4 items, the first 2:\n1. alpha\n2. beta"},
		{"array shorter than K", ` ["alpha", {"k": [1, 2]}] `, edison,
			"2 items:\n1. alpha\n2. {\"k\":[1,2]}"},
		{"empty array", `[]`, edison, "no items"},
		{"object with a list, other members kept in order", `{"query":"solar","results":[{"title":"A","url":"https://a"},{"title":"B"},{"title":"C"},{"title":"D"}],"total":4}`, edison,
			"query: solar\nresults: 4 items, the first 3:\n1. {\"title\":\"A\",\"url\":\"https://a\"}\n2. {\"title\":\"B\"}\n3. {\"title\":\"C\"}\ntotal: 4"},
		{"items cut to N characters", `["0123456789abcdef", "é\u00e9éééé"]`, Summary{ItemChars: 4},
			"2 items:\n1. 0123…\n2. éééé…"},
		{"white space made one space", "[\"a\\n\\n  b\\tc  \"]", Summary{Items: 1}, "1 item:\n1. a b c"},
		{"member values cut too", `{"note":"a long note here","xs":[1]}`, Summary{ItemChars: 6}, "note: a long…\nxs: 1 item:\n1. 1"},
		{"object without a list: bytes", `{"stdout":"0123456789","code":0}`, Summary{Items: 1, MaxBytes: 40}, `{"stdout":"0123456789","code":0}`},
		{"not JSON: bytes", strings.Repeat("x", 100), Summary{Items: 1, MaxBytes: 60}, strings.Repeat("x", 22) + "\n[truncated: showing 22 of 100 bytes]"},
		{"the summary itself over the cap", `["` + strings.Repeat("y", 100) + `"]`, Summary{Items: 1, MaxBytes: 60}, "1 item:\n1. " + strings.Repeat("y", 11) + "\n[truncated: showing 22 of 111 bytes]"},
		{"a cap too small for the marker", strings.Repeat("z", 100), Summary{MaxBytes: 5}, "zzzzz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(tc.out, tc.s, pick(tc.s.MaxBytes, 16<<10))
			if got != tc.want {
				t.Errorf("summarize(%q, %+v):\n got %q\nwant %q", tc.out, tc.s, got, tc.want)
			}
		})
	}
}

// genResultText draws tool outputs: list-like JSON (arrays, objects with
// arrays), other JSON, and plain text, with multi-byte characters.
func genResultText() *rapid.Generator[string] {
	word := rapid.StringMatching(`[a-zé😀 \n]{0,30}`)
	return rapid.Custom(func(t *rapid.T) string {
		items := rapid.SliceOfN(word, 0, 12).Draw(t, "items")
		arr, _ := json.Marshal(items)
		switch rapid.IntRange(0, 3).Draw(t, "shape") {
		case 0:
			return string(arr)
		case 1:
			return fmt.Sprintf(`{"q":%q,"results":%s,"n":%d}`, word.Draw(t, "q"), arr, len(items))
		case 2:
			return fmt.Sprintf(`{"stdout":%q}`, word.Draw(t, "stdout"))
		}
		return strings.Repeat(word.Draw(t, "text"), rapid.IntRange(0, 40).Draw(t, "repeat"))
	})
}

func genSummary() *rapid.Generator[Summary] {
	return rapid.Custom(func(t *rapid.T) Summary {
		return Summary{
			Items:     rapid.IntRange(0, 5).Draw(t, "items"),
			ItemChars: rapid.IntRange(0, 40).Draw(t, "item_chars"),
			MaxBytes:  rapid.IntRange(0, 300).Draw(t, "max_bytes"),
		}
	})
}

// TestSummaryNeverExceedsItsCap: whatever the result and the settings, the
// model reads at most the cap (the summary's, else the tool's byte cap),
// as valid UTF-8, the same bytes every time.
func TestSummaryNeverExceedsItsCap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out := genResultText().Draw(t, "out")
		s := genSummary().Draw(t, "summary")
		if !s.on() {
			s.Items = 1 // the zero Summary is today's truncation: see below
		}
		tool := Tool{Name: "t", MaxResultBytes: rapid.IntRange(0, 200).Draw(t, "tool_cap"), Summary: &s}
		cfg := DefaultConfig()
		got := cfg.modelOutput(tool, out)
		limit := pick(s.MaxBytes, cfg.resultCap(tool))
		if len(got) > limit {
			t.Fatalf("%d bytes over the cap %d: %q", len(got), limit, got)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if again := cfg.modelOutput(tool, out); again != got {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
	})
}

// TestSummaryZeroIsTodaysTruncation: without a summary (the agent's or the
// tool's), the model reads exactly what the byte cap always gave it.
func TestSummaryZeroIsTodaysTruncation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out := genResultText().Draw(t, "out")
		cfg := DefaultConfig()
		cfg.Limits.ToolResultBytes = rapid.IntRange(0, 300).Draw(t, "limit")
		tool := Tool{Name: "t", MaxResultBytes: rapid.IntRange(0, 300).Draw(t, "tool_cap")}
		if rapid.Bool().Draw(t, "explicit zero") {
			tool.Summary = &Summary{}
		}
		if got, want := cfg.modelOutput(tool, out), truncate(out, cfg.resultCap(tool)); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func TestSummaryToolReplacesAgent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Summary = Summary{Items: 1}
	list := `["a","b","c"]`
	if got := cfg.modelOutput(Tool{Name: "t"}, list); got != "3 items, the first 1:\n1. a" {
		t.Errorf("agent summary: %q", got)
	}
	if got := cfg.modelOutput(Tool{Name: "t", Summary: &Summary{Items: 2}}, list); got != "3 items, the first 2:\n1. a\n2. b" {
		t.Errorf("tool summary: %q", got)
	}
	if got := cfg.modelOutput(Tool{Name: "t", Summary: &Summary{}}, list); got != list {
		t.Errorf("a tool's zero summary turns it off: %q", got)
	}
}

func TestSummaryConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Summary = Summary{Items: -1}
	cfg.Tools = []Tool{{Name: "t", Summary: &Summary{MaxBytes: -5}}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "summary.items is negative") || !strings.Contains(err.Error(), `tools[0] "t": summary.max_bytes is negative`) {
		t.Fatalf("Validate: %v", err)
	}
}

// summaryRun drives a run of cfg to its first tool turn with reply, answers
// it with results, and returns the message the model reads next.
func summaryRun(t *testing.T, cfg Config, reply ModelReply, results ...ToolResult) (Message, State) {
	t.Helper()
	st, err := Start(cfg, Request{Input: "find"})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []Result{reply, ToolResults{Results: results}} {
		a, err := Step(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if st, err = Resume(cfg, a.Next(), res); err != nil {
			t.Fatal(err)
		}
	}
	return st.Messages[len(st.Messages)-1], st
}

var bigList = `{"results":[` + strings.TrimSuffix(strings.Repeat(`{"title":"`+strings.Repeat("t", 300)+`"},`, 60), ",") + `],"total":60}`

// TestSummaryStrictHistoryLine: in the strict format a summarized result
// reads "Tool N [name]: summary", and a failure {"ok": false, ...} on that
// line; the results handed to Resume stay whole (the store keeps them).
func TestSummaryStrictHistoryLine(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Format = FormatStrict
	cfg.Tools = []Tool{{Name: "web_search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Summary: &Summary{Items: 3, ItemChars: 20, MaxBytes: 900}}, {Name: "plain"}}
	call := ModelReply{Text: `{"tool": "web_search", "args": {"query": "solar"}}`}
	full := ToolResult{CallID: "call_1_1", Output: bigList}
	msg, st := summaryRun(t, cfg, call, full)
	want := "Tool 1 [web_search]: results: 60 items, the first 3:\n" +
		"1. {\"title\":\"tttttttttt…\n2. {\"title\":\"tttttttttt…\n3. {\"title\":\"tttttttttt…\ntotal: 60"
	if msg.Role != RoleUser || msg.Content != want {
		t.Fatalf("history line:\n got %q\nwant %q", msg.Content, want)
	}
	if full.Output != bigList || len(bigList) < 16<<10 {
		t.Fatal("the test's result changed or is too small to show the byte cap is not applied first")
	}
	// The next call is the model's second: N follows the model calls.
	for _, res := range []Result{ModelReply{Text: `{"tool": "web_search", "args": {"query": "wind"}}`}, ToolResults{Results: []ToolResult{{CallID: "call_3_1", Error: "timeout"}}}} {
		a, err := Step(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if st, err = Resume(cfg, a.Next(), res); err != nil {
			t.Fatal(err)
		}
	}
	if got := st.Messages[len(st.Messages)-1].Content; got != `Tool 2 [web_search]: {"ok": false, "error": "timeout"}` {
		t.Fatalf("failed call: %q", got)
	}
	// A tool without a summary keeps the strict rendering.
	msg, _ = summaryRun(t, cfg, ModelReply{Text: `{"tool": "plain", "args": {}}`}, ToolResult{CallID: "call_1_1", Output: "ok"})
	if msg.Content != `{"tool": "plain", "result": "ok"}` {
		t.Fatalf("unsummarized: %q", msg.Content)
	}
}

func TestSummaryNativeToolMessage(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Summary = Summary{Items: 2, ItemChars: 5}
	cfg.Tools = []Tool{{Name: "list"}}
	msg, _ := summaryRun(t, cfg, ModelReply{Calls: []NativeCall{{ID: "c1", Name: "list", Arguments: "{}"}}},
		ToolResult{CallID: "c1", Output: `["first item","second","third"]`})
	if msg.Role != RoleTool || msg.Content != "3 items, the first 2:\n1. first…\n2. secon…" {
		t.Fatalf("tool message: %+v", msg)
	}
}

// TestSummaryLabel: with a label a list reads on one line, an object item
// as its members' values; a tool's declared label applies when summaries
// are on and the summary names none; summaries off leave the result alone.
func TestSummaryLabel(t *testing.T) {
	out := `[
 {"title": "Go", "url": "https://go.dev/", "snippet": "a  language"},
 {"title": "Pkg", "url": "https://pkg.go.dev/"},
 {"title": "Third", "url": "https://example.com/3", "snippet": "three"},
 "plain"
]`
	got := summarize(out, Summary{Items: 3, ItemChars: 20, Label: "Web search results"}, 900)
	want := "Web search results: Go - https://go.dev/… | Pkg - https://pkg.go… | Third - https://exam…"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := summarize(`[]`, Summary{Label: "Hits"}, 0); got != "Hits: none" {
		t.Fatalf("empty: %q", got)
	}
	tool := Tool{Name: "web_search", SummaryLabel: "Web search results"}
	cfg := DefaultConfig()
	if got := cfg.modelOutput(tool, out); got != out {
		t.Fatalf("summaries off changed the result: %q", got)
	}
	cfg.Summary = Summary{Items: 2}
	if got := cfg.modelOutput(tool, out); !strings.HasPrefix(got, "Web search results: Go - https://go.dev/ - a language | Pkg") {
		t.Fatalf("the tool's label: %q", got)
	}
	own := Summary{Items: 1, Label: "Found"}
	tool.Summary = &own
	if got := cfg.modelOutput(tool, out); got != "Found: Go - https://go.dev/ - a language" {
		t.Fatalf("the table's label: %q", got)
	}
}
