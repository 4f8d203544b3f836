package core

import (
	"encoding/json"
	"strings"
	"testing"
)

var docTool = Tool{
	Name:        "find_user",
	Description: "Find a user id by name and zip code.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the user's full name"},"zip":{"type":"string","default":"10001"}},"required":["name"]}`),
}

func docConfig(f Format, tools ...Tool) Config {
	cfg := DefaultConfig()
	cfg.Format = f
	cfg.Tools = tools
	return cfg
}

func TestPromptToolDocsEmpty(t *testing.T) {
	if got := ToolDocs(docConfig(FormatNative, docTool)); got != "" {
		t.Errorf("native: %q", got)
	}
	if got := ToolDocs(docConfig(FormatHelpers)); got != "" {
		t.Errorf("no tools: %q", got)
	}
}

func TestPromptToolDocsHelpers(t *testing.T) {
	got := ToolDocs(docConfig(FormatHelpers, docTool, Tool{Name: "now"}))
	for _, want := range []string{
		"find_user(name: str, zip: str = \"10001\") -> str\n    Find a user id by name and zip code.\n    name: the user's full name\n",
		"\nnow() -> str\n",
		"<helpers>\nfind_user(name=\"...\")\n</helpers>",
		"assign it to a name (r = tool(...))",
		"the block stops there",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("docs lack %q:\n%s", want, got)
		}
	}
}

// TestPromptToolDocsExamplesParse: every format's docs show an example that
// its parser reads back as a call of the first tool.
func TestPromptToolDocsExamplesParse(t *testing.T) {
	ex := exampleCall(docTool)
	for _, f := range []Format{FormatXML, FormatJSON, FormatFenced, FormatStrict, FormatHelpers, FormatAuto} {
		docs := ToolDocs(docConfig(f, docTool))
		if docs != ToolDocs(docConfig(f, docTool)) {
			t.Errorf("%s: docs are not deterministic", f)
		}
		var example string
		switch f {
		case FormatJSON:
			example = renderJSONEnvelope("what you tell the user", []NativeCall{ex})
		case FormatStrict, FormatHelpers:
			c := ex
			c.ID = ""
			example = RenderCall(f, c)
		default:
			example = RenderCall(f, ex)
		}
		if !strings.Contains(docs, example) {
			t.Errorf("%s: docs lack the example %q:\n%s", f, example, docs)
		}
		got, err := Parse(f, ModelReply{Text: example}, []Tool{docTool})
		if err != nil || len(got.Calls) != 1 || got.Calls[0].Name != "find_user" || got.Calls[0].Arguments != `{"name":"..."}` {
			t.Errorf("%s: example parses to %+v, %v", f, got, err)
		}
		switch f {
		case FormatHelpers:
		case FormatFenced:
			if !strings.Contains(docs, "  - name (string, required): the user's full name\n") {
				t.Errorf("%s: docs lack the parameter list:\n%s", f, docs)
			}
		default:
			if !strings.Contains(docs, `"required":["name"]`) {
				t.Errorf("%s: docs lack the schema:\n%s", f, docs)
			}
		}
	}
}

func TestPromptPySignature(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"name":{"type":"string"},"zip":{"type":"string","default":"10001"}},"required":["name"]}`,
			`f(name: str, zip: str = "10001") -> str`},
		{`{"properties":{"b":{"type":"integer"},"a":{"type":"number"},"c":{"type":"boolean","default":false},"d":{"type":"null"}},"required":["b","a"]}`,
			`f(b: int, a: float, c: bool = False, d: None = ...) -> str`},
		{`{"properties":{"opt":{"type":"string"},"req":{"type":"integer"}},"required":["req"]}`,
			`f(*, opt: str = ..., req: int) -> str`},
		{`{"properties":{"e":{"enum":["a","b",1]},"k":{"const":"x"},"n":{"type":["string","null"]},"u":{"anyOf":[{"type":"integer"},{"type":"string"}]}}}`,
			`f(e: Literal["a", "b", 1] = ..., k: Literal["x"] = ..., n: str | None = ..., u: int | str = ...) -> str`},
		{`{"properties":{"l":{"type":"array","items":{"type":"integer"}},"m":{"type":"array"},"o":{"type":"object"},"p":{"type":"object","properties":{"x":{"type":"string"},"y":{}},"required":["x"]},"q":{}}}`,
			`f(l: list[int] = ..., m: list = ..., o: dict = ..., p: {"x": str, "y": NotRequired[Any]} = ..., q: Any = ...) -> str`},
		{`{"properties":{"d":{"type":"array","default":[1,"a",{"k":null}]}}}`, `f(d: list = [1, "a", {"k": None}]) -> str`},
		{`not json`, `f() -> str`},
		{``, `f() -> str`},
	} {
		got, _ := pySignature(Tool{Name: "f", Parameters: json.RawMessage(tc.schema)})
		if got != tc.want {
			t.Errorf("schema %s:\n got %s\nwant %s", tc.schema, got, tc.want)
		}
	}
	_, notes := pySignature(Tool{Name: "f", Parameters: json.RawMessage(`{"properties":{"n":{"type":"integer","minimum":1,"maximum":50,"description":"how\nmany"},"s":{"type":"string","pattern":"^a"},"t":{"description":"plain"}}}`)})
	want := []string{"n: how many (minimum 1, maximum 50)", `s: (pattern "^a")`, "t: plain"}
	if strings.Join(notes, "|") != strings.Join(want, "|") {
		t.Errorf("notes %q, want %q", notes, want)
	}
}

func TestPromptToolDocsMemoryTools(t *testing.T) {
	cfg := docConfig(FormatHelpers)
	cfg.Memory.Tools = true
	got := ToolDocs(cfg)
	for _, want := range []string{
		"memory_search(query: str, limit: int = 5, global: bool = ...) -> str",
		`memory_create(entities: list[{"name": str, "type": NotRequired[str], "observations": NotRequired[list[str]]}] = ..., relations: list[{"from": str, "to": str, "type": str}] = ...) -> str`,
		"memory_traverse(from: str, relation: str = ..., depth: int = 1) -> str",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("docs lack %q:\n%s", want, got)
		}
	}
}

func TestRenderResults(t *testing.T) {
	calls := []ToolCall{{ID: "a1", Name: "search"}, {ID: "a2", Name: "fetch"}, {ID: "a3", Name: "now"}}
	results := []ToolResult{{CallID: "a1", Output: "found ```x``` \"3\""}, {CallID: "a2", Error: "timeout"}, {CallID: "a3"}}
	for _, tc := range []struct {
		f    Format
		want string
	}{
		{FormatXML, "<tool_result name=\"search\" tag=\"a1\">\nfound ```x``` \"3\"\n</tool_result>\n<tool_result name=\"fetch\" tag=\"a2\" error=\"true\">\ntimeout\n</tool_result>\n<tool_result name=\"now\" tag=\"a3\">\n(no output)\n</tool_result>"},
		{FormatHelpers, "<helpers_result name=\"search\" tag=\"a1\">\nfound ```x``` \"3\"\n</helpers_result>\n<helpers_result name=\"fetch\" tag=\"a2\" error=\"true\">\ntimeout\n</helpers_result>\n<helpers_result name=\"now\" tag=\"a3\">\n(no output)\n</helpers_result>"},
		{FormatJSON, "{\"results\": [\n  {\"tool\": \"search\", \"tag\": \"a1\", \"result\": \"found ```x``` \\\"3\\\"\"},\n  {\"tool\": \"fetch\", \"tag\": \"a2\", \"ok\": false, \"error\": \"timeout\"},\n  {\"tool\": \"now\", \"tag\": \"a3\", \"result\": \"\"}\n]}"},
		{FormatFenced, "````tool_result search a1\nfound ```x``` \"3\"\n````\n```tool_result fetch a2 error\ntimeout\n```\n```tool_result now a3\n(no output)\n```"},
		{FormatStrict, "{\"tool\": \"search\", \"result\": \"found ```x``` \\\"3\\\"\"}\n{\"tool\": \"fetch\", \"ok\": false, \"error\": \"timeout\"}\n{\"tool\": \"now\", \"result\": \"\"}"},
		{FormatAuto, "Result of search (call a1):\nfound ```x``` \"3\"\n\nResult of fetch (call a2), failed:\ntimeout\n\nResult of now (call a3):\n(no output)\n"},
	} {
		if got := RenderResults(tc.f, calls, results); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.f, got, tc.want)
		}
	}
	var v any
	if err := json.Unmarshal([]byte(RenderResults(FormatJSON, calls, results)), &v); err != nil {
		t.Errorf("json results are not JSON: %v", err)
	}
	// Misaligned input never panics.
	for _, f := range []Format{FormatXML, FormatJSON, FormatFenced, FormatStrict, FormatHelpers, FormatAuto, FormatNative} {
		_ = RenderResults(f, calls, nil)
	}
}

func TestRenderCallNative(t *testing.T) {
	got := RenderCall(FormatNative, NativeCall{ID: "c1", Name: "s", Arguments: `{"q":"x"}`})
	if want := `{"id": "c1", "name": "s", "arguments": "{\"q\":\"x\"}"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
