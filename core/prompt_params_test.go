package core

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// seedTools are seed 001's code execution and web search tools, as JSON
// Schemas.
var seedTools = []Tool{
	{Name: "code_execution", Description: "Execute code in various programming languages.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"language":{"type":"string","description":"Programming language (python, javascript, bash)","enum":["python","javascript","bash"]},"code":{"type":"string","description":"Code to execute"},"timeout":{"type":"integer","description":"Execution timeout in seconds","default":10}},"required":["language","code"]}`)},
	{Name: "web_search", Description: "Search the web for information.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Search query"},"num_results":{"type":"integer","description":"Number of results to return","default":5}},"required":["query"]}`)},
	{Name: "now"},
}

// TestFencedDocsReadAsTheSeed: the fenced format documents tools the way
// seed 001's ToolUseProtocol does, "- param (type, required, default: X):
// description", then shows a ```tool block.
func TestFencedDocsReadAsTheSeed(t *testing.T) {
	got := ToolDocs(docConfig(FormatFenced, seedTools...))
	want := "You have access to the following tools:\n" +
		"\ncode_execution: Execute code in various programming languages.\n" +
		"Parameters:\n" +
		"  - language (string, required, one of: \"python\", \"javascript\", \"bash\"): Programming language (python, javascript, bash)\n" +
		"  - code (string, required): Code to execute\n" +
		"  - timeout (integer, optional, default: 10): Execution timeout in seconds\n" +
		"\nweb_search: Search the web for information.\n" +
		"Parameters:\n" +
		"  - query (string, required): Search query\n" +
		"  - num_results (integer, optional, default: 5): Number of results to return\n" +
		"\nnow\n" +
		"Parameters: none\n" +
		"\nTo use a tool, respond with a fenced block like this:\n\n" +
		"```tool\n{\"tool\": \"code_execution\", \"parameters\": {\"language\":\"python\",\"code\":\"...\"}, \"tag\": \"a1\"}\n```\n\n" +
		"- One call per block: a JSON object with \"tool\" and \"parameters\" (and optionally \"tag\", naming the call). Several blocks run in the order written.\n" +
		"- Text outside the blocks is your message. The tools are run, and each result comes back to you in a ```tool_result block.\n" +
		"- To give your final answer, reply without a ```tool block.\n"
	if got != want {
		t.Errorf("fenced docs:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "JSON Schema") {
		t.Error("fenced docs still show the raw schema")
	}
}

func TestToolParamDocs(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{``, "Parameters: none\n"},
		{`{"type":"object","additionalProperties":false}`, "Parameters: none\n"},
		{`{"type":"object","properties":{"n":{"type":["integer","null"],"minimum":1,"maximum":9,"description":" how\n many "}}}`,
			"Parameters:\n  - n (integer or null, optional, minimum 1, maximum 9): how many\n"},
		{`{"properties":{"u":{"anyOf":[{"type":"integer"},{"type":"string","format":"date"}]},"c":{"const":"x"},"e":{"enum":[1,2.5]},"x":{},"s":{"type":"string","nullable":true,"pattern":"^a"}}}`,
			"Parameters:\n  - u (integer or string, optional)\n  - c (string, optional, always \"x\")\n  - e (integer or number, optional, one of: 1, 2.5)\n  - x (any, optional)\n  - s (string or null, optional, pattern \"^a\")\n"},
		{`{"properties":{"f":{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true,"maxItems":3}},"required":["tags"]},"rows":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}}}}},"additionalProperties":{"type":"string"}}`,
			"Parameters:\n  - f (object, optional)\n    - tags (array of string, required, maxItems 3, unique items)\n  - rows (array of object, optional)\n    - id (integer, optional)\n  - (any other name) (string, optional)\n"},
	} {
		if got := ToolParamDocs(Tool{Name: "t", Parameters: json.RawMessage(tc.schema)}); got != tc.want {
			t.Errorf("schema %s:\n got %q\nwant %q", tc.schema, got, tc.want)
		}
	}
}

// TestToolDocsAreDeterministic: the same config renders the same docs and
// results, byte for byte, in every format.
func TestToolDocsAreDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := DefaultConfig()
		cfg.Format = rapid.SampledFrom((*Formats)(nil).Names()).Draw(t, "format")
		n := rapid.IntRange(1, len(seedTools)).Draw(t, "tools")
		cfg.Tools = seedTools[:n]
		cfg.Memory.Tools = rapid.Bool().Draw(t, "memory")
		if a, b := ToolDocs(cfg), ToolDocs(cfg); a != b {
			t.Fatalf("docs differ:\n%s\n%s", a, b)
		}
		calls := []ToolCall{{ID: "a", Name: "web_search"}, {ID: "b", Name: "now"}}
		results := []ToolResult{{CallID: "a", Output: rapid.String().Draw(t, "out")}, {CallID: "b", Error: rapid.String().Draw(t, "err")}}
		if a, b := RenderResults(cfg.format(), calls, results), RenderResults(cfg.format(), calls, results); a != b {
			t.Fatalf("results differ:\n%s\n%s", a, b)
		}
	})
}

// TestJSONFormatsMarkErrors: in json and strict a failure reads
// "ok": false with its "error"; a success keeps its "result" alone.
func TestJSONFormatsMarkErrors(t *testing.T) {
	calls := []ToolCall{{ID: "a1", Name: "search"}, {ID: "a2", Name: "fetch"}}
	results := []ToolResult{{CallID: "a1", Output: "found"}, {CallID: "a2", Error: "timeout \"x\""}}
	var env struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(RenderResults(FormatJSON, calls, results)), &env); err != nil {
		t.Fatal(err)
	}
	if len(env.Results) != 2 || env.Results[1]["ok"] != false || env.Results[1]["error"] != `timeout "x"` || env.Results[0]["result"] != "found" {
		t.Errorf("json: %v", env.Results)
	}
	if _, has := env.Results[0]["ok"]; has {
		t.Errorf("json success carries ok: %v", env.Results[0])
	}
	for i, line := range strings.Split(RenderResults(FormatStrict, calls, results), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("strict line %d: %v", i, err)
		}
		if _, has := v["ok"]; has != (i == 1) || (i == 1 && (v["ok"] != false || v["error"] != `timeout "x"`)) {
			t.Errorf("strict line %d: %v", i, v)
		}
	}
}
