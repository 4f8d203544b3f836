package coretest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// argSpec is one property of a generated tool schema.
type argSpec struct {
	name, schema string
	valid, wrong func(*rapid.T) any
}

var argPool = []argSpec{
	{"q", `{"type":"string","minLength":1}`,
		func(t *rapid.T) any { return rapid.StringMatching(`[a-zA-Zé ]{1,12}`).Draw(t, "q") },
		func(t *rapid.T) any { return rapid.IntRange(-5, 5).Draw(t, "q-wrong") }},
	{"n", `{"type":"integer","minimum":0,"maximum":100}`,
		func(t *rapid.T) any { return rapid.IntRange(0, 100).Draw(t, "n") },
		func(t *rapid.T) any { return rapid.SampledFrom([]any{"5", 1.5, true}).Draw(t, "n-wrong") }},
	{"flag", `{"type":"boolean"}`,
		func(t *rapid.T) any { return rapid.Bool().Draw(t, "flag") },
		func(t *rapid.T) any { return rapid.SampledFrom([]any{"true", 1}).Draw(t, "flag-wrong") }},
	{"tags", `{"type":"array","items":{"type":"string"}}`,
		func(t *rapid.T) any {
			return rapid.SliceOfN(rapid.StringMatching(`[a-z]{1,5}`), 0, 3).Draw(t, "tags")
		},
		func(t *rapid.T) any { return "not-a-list" }},
}

// Tools generates tool definitions with small JSON Schemas, internal or external.
func Tools() *rapid.Generator[[]core.Tool] {
	return rapid.Custom(func(t *rapid.T) []core.Tool {
		n := rapid.IntRange(0, 4).Draw(t, "tools")
		tools := make([]core.Tool, n)
		for i := range tools {
			var props, required []string
			for _, a := range argPool {
				if rapid.Bool().Draw(t, "has-"+a.name) {
					props = append(props, fmt.Sprintf("%q:%s", a.name, a.schema))
					if rapid.Bool().Draw(t, "req-"+a.name) {
						required = append(required, fmt.Sprintf("%q", a.name))
					}
				}
			}
			schema := fmt.Sprintf(`{"type":"object","properties":{%s}`, strings.Join(props, ","))
			if len(required) > 0 {
				schema += fmt.Sprintf(`,"required":[%s]`, strings.Join(required, ","))
			}
			schema += "}"
			tools[i] = core.Tool{
				Name:        fmt.Sprintf("tool_%d", i),
				Description: fmt.Sprintf("test tool %d", i),
				Parameters:  json.RawMessage(schema),
				Mode:        rapid.SampledFrom([]core.ToolMode{core.ModeInternal, core.ModeInternal, core.ModeExternal}).Draw(t, "mode"),
			}
		}
		return tools
	})
}

// Configs generates valid agent configs with small limits, every policy switch
// and, when formats is non-empty, one of those built-in tool-call formats.
// The configs are plain (not compiled): Start, Step and Resume compile what
// they need on every call. ConfigsWith generates compiled ones.
func Configs(formats ...core.Format) *rapid.Generator[core.Config] {
	return configs(formats)
}

// ConfigsWith generates configs as Configs does, compiled (core.Compile)
// with the format table fs, so that they may name the formats fs adds:
// formats lists the names to draw from, built-in or added. The replies
// Replies generates for such a config are written with the table's
// RenderCall.
func ConfigsWith(fs *core.Formats, formats ...core.Format) *rapid.Generator[core.Config] {
	return rapid.Custom(func(t *rapid.T) core.Config {
		cfg, err := core.Compile(configs(formats).Draw(t, "plain"), fs)
		if err != nil {
			t.Fatalf("a generated config does not compile: %v", err)
		}
		return cfg
	})
}

func configs(formats []core.Format) *rapid.Generator[core.Config] {
	if len(formats) == 0 {
		formats = []core.Format{core.FormatNative}
	}
	return rapid.Custom(func(t *rapid.T) core.Config {
		cfg := core.DefaultConfig()
		cfg.Name = "gen"
		cfg.SystemPrompt = "You are generated."
		cfg.Format = rapid.SampledFrom(formats).Draw(t, "format")
		cfg.Tools = Tools().Draw(t, "tools")
		if rapid.Bool().Draw(t, "helper") {
			cfg.Models.Helper = "helper"
		}
		cfg.Memory.Tools = rapid.Bool().Draw(t, "memory-tools")
		cfg.Memory.Recall = rapid.Bool().Draw(t, "recall")
		cfg.Limits = core.Limits{
			MaxSteps:        rapid.IntRange(1, 30).Draw(t, "max-steps"),
			MaxCallsPerTurn: rapid.IntRange(1, 4).Draw(t, "max-calls"),
			MaxRepeats:      rapid.IntRange(2, 4).Draw(t, "max-repeats"),
			MaxCorrections:  rapid.IntRange(1, 2).Draw(t, "max-corrections"),
			MaxEscalations:  rapid.IntRange(1, 2).Draw(t, "max-escalations"),
			ToolResultBytes: rapid.IntRange(64, 512).Draw(t, "result-bytes"),
			MaxStateBytes:   rapid.IntRange(2000, 20000).Draw(t, "state-bytes"),
		}
		cfg.Policy = core.Policy{
			Parallel:          rapid.Bool().Draw(t, "parallel"),
			StopOnError:       rapid.Bool().Draw(t, "stop-on-error"),
			RejectUnknownArgs: rapid.Bool().Draw(t, "reject-unknown"),
		}
		return cfg
	})
}

// Args generates the arguments of a call to tool: mostly valid, sometimes with
// a wrong type, a missing required argument, or not an object at all.
func Args(tool core.Tool) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		_ = json.Unmarshal(tool.Parameters, &schema)
		switch rapid.IntRange(0, 9).Draw(t, "args-shape") {
		case 0:
			return rapid.SampledFrom([]string{`[1,2]`, `"x"`, `{"q":`, `null`, `{} {}`}).Draw(t, "bad-json")
		case 1:
			args := map[string]any{}
			for _, a := range argPool {
				if _, ok := schema.Properties[a.name]; ok {
					args[a.name] = a.wrong(t)
				}
			}
			if len(args) == 0 {
				args["unexpected"] = 1
			}
			return mustJSON(args)
		}
		args := map[string]any{}
		for _, a := range argPool {
			if _, ok := schema.Properties[a.name]; !ok {
				continue
			}
			if contains(schema.Required, a.name) || rapid.Bool().Draw(t, "opt-"+a.name) {
				args[a.name] = a.valid(t)
			}
		}
		return mustJSON(args)
	})
}

// Replies generates primary-model replies for cfg: final answers, stuck or
// empty replies, and turns of calls (valid, invalid, unknown tools, repeats).
func Replies(cfg core.Config) *rapid.Generator[core.ModelReply] {
	return rapid.Custom(func(t *rapid.T) core.ModelReply {
		tools := cfg.ToolList()
		usage := core.Usage{PromptTokens: rapid.IntRange(0, 50).Draw(t, "pt"), CompletionTokens: rapid.IntRange(0, 50).Draw(t, "ct")}
		switch kind := rapid.IntRange(0, 9).Draw(t, "reply-kind"); {
		case kind == 0:
			return core.ModelReply{Text: rapid.StringMatching(`[a-z ]{0,20}`).Draw(t, "answer"), Usage: usage}
		case kind == 1:
			return core.ModelReply{Text: "Honestly I'm stuck here.", Usage: usage}
		case kind == 2:
			return core.ModelReply{Usage: usage}
		case kind == 3 && rapid.IntRange(0, 20).Draw(t, "provider-error") == 0:
			return core.ModelReply{Error: "HTTP 500 from provider"}
		}
		n := rapid.IntRange(1, 3).Draw(t, "calls")
		calls := make([]core.NativeCall, n)
		for i := range calls {
			var c core.NativeCall
			if len(tools) == 0 || rapid.IntRange(0, 12).Draw(t, "unknown-tool") == 0 {
				c = core.NativeCall{Name: "no_such_tool", Arguments: `{}`}
			} else {
				tool := rapid.SampledFrom(tools).Draw(t, "tool")
				c = core.NativeCall{Name: tool.Name, Arguments: memoryOr(tool, Args(tool)).Draw(t, "args")}
			}
			if rapid.Bool().Draw(t, "has-id") {
				c.ID = rapid.SampledFrom([]string{"a", "b", "c", "call-1"}).Draw(t, "id")
			}
			calls[i] = c
		}
		preamble := rapid.SampledFrom([]string{"", "Let me check."}).Draw(t, "preamble")
		f := cfg.Format
		if f == core.FormatAuto {
			f = rapid.SampledFrom([]core.Format{core.FormatNative, core.FormatXML, core.FormatHelpers, core.FormatFenced, core.FormatJSON, core.FormatStrict}).Draw(t, "auto-as")
		}
		if f == core.FormatNative || f == "" {
			return core.ModelReply{Text: preamble, Calls: calls, Usage: usage}
		}
		if f == core.FormatHelpers && rapid.IntRange(0, 2).Draw(t, "program") == 0 {
			return core.ModelReply{Text: programText(t, preamble, calls), Usage: usage}
		}
		return core.ModelReply{Text: textCalls(t, cfg.Formats(), f, preamble, calls), Usage: usage}
	})
}

// textCalls writes calls in a text format, sometimes cut off mid-call as a
// model that hit its token limit would.
func textCalls(t *rapid.T, fs *core.Formats, f core.Format, preamble string, calls []core.NativeCall) string {
	if f == core.FormatStrict || f == core.FormatJSON {
		calls = calls[:1] // one object holds one call in these generators
	}
	text := preamble
	for _, c := range calls {
		if text != "" {
			text += "\n"
		}
		text += fs.RenderCall(f, c)
	}
	if rapid.IntRange(0, 8).Draw(t, "truncate") == 0 && len(text) > 2 {
		text = text[:rapid.IntRange(1, len(text)-1).Draw(t, "cut")]
	}
	return text
}

// programText writes calls as a helpers program whose later calls use the
// first one's result: r0 = first(...), each later call with its "q"
// argument (when it has one) replaced by f"{r0}", and a last statement
// that reads r0. The result decides what happens: a failed first call, or
// an empty one where q needs a character, stops the block.
func programText(t *rapid.T, preamble string, calls []core.NativeCall) string {
	stmt := func(c core.NativeCall) string {
		s := core.RenderCall(core.FormatHelpers, c)
		return strings.TrimSuffix(strings.TrimPrefix(s, "<helpers>\n"), "\n</helpers>")
	}
	lines := []string{"r0 = " + stmt(calls[0])}
	for _, c := range calls[1:] {
		var args map[string]any
		if json.Unmarshal([]byte(c.Arguments), &args) != nil || args["q"] == nil || rapid.Bool().Draw(t, "keep-q") {
			lines = append(lines, stmt(c))
			continue
		}
		delete(args, "q")
		c.Arguments = mustJSON(args)
		s := stmt(c)
		i := strings.IndexByte(s, '(')
		sep := ", "
		if strings.HasSuffix(s, "()") {
			sep = ""
		}
		lines = append(lines, s[:i+1]+`q=f"{r0}"`+sep+s[i+1:])
	}
	lines = append(lines, rapid.SampledFrom([]string{`seen = f"{r0}"`, `first = r0[0]`, `n = r0["n"] + 1`}).Draw(t, "reads-r0"))
	text := "<helpers>\n" + strings.Join(lines, "\n") + "\n</helpers>"
	if preamble != "" {
		text = preamble + "\n" + text
	}
	return text
}

// AllFormats lists every built-in tool-call format, for Configs, as the
// built-in table lists them.
var AllFormats = (*core.Formats)(nil).Names()

// memoryOr generates arguments for the memory built-ins, else uses gen.
func memoryOr(tool core.Tool, gen *rapid.Generator[string]) *rapid.Generator[string] {
	switch tool.Name {
	case core.ToolMemorySearch:
		return rapid.SampledFrom([]string{`{"query":"alice"}`, `{"query":"bob","limit":2}`, `{"query":""}`, `{}`})
	case core.ToolMemoryCreate:
		return rapid.SampledFrom([]string{`{"entities":[{"name":"alice","type":"person","observations":["likes tea"]}]}`, `{"relations":[{"from":"alice","to":"bob","type":"knows"}]}`, `{}`})
	case core.ToolMemoryTraverse:
		return rapid.SampledFrom([]string{`{"from":"alice"}`, `{"from":"alice","relation":"knows","depth":2}`, `{"depth":1}`})
	}
	return gen
}

// ResultFor generates a result that fits action a.
func ResultFor(cfg core.Config, a core.Action) *rapid.Generator[core.Result] {
	return rapid.Custom(func(t *rapid.T) core.Result {
		if rapid.IntRange(0, 60).Draw(t, "cancel") == 0 {
			return core.Cancelled{Reason: "test"}
		}
		switch a := a.(type) {
		case core.RequestModelCall:
			if a.Role == core.Helper {
				return core.ModelReply{Text: rapid.SampledFrom([]string{"1. try tool_0", ""}).Draw(t, "plan")}
			}
			return Replies(cfg).Draw(t, "reply")
		case core.RequestToolCalls:
			return toolResults(t, a.Calls, a.StopOnError)
		case core.RequestExternalToolCalls:
			return toolResults(t, a.Calls, false)
		case core.RequestMemorySearch:
			hits := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) core.MemoryHit {
				return core.MemoryHit{Entity: core.Entity{Name: rapid.StringMatching(`[a-z]{1,6}`).Draw(t, "name"), Observations: []string{"seen"}}, Score: 1}
			}), 0, 3).Draw(t, "hits")
			return core.MemoryHits{Hits: hits}
		case core.RequestMemoryCreate:
			if rapid.IntRange(0, 5).Draw(t, "mem-err") == 0 {
				return core.MemoryCreated{Error: "disk full"}
			}
			return core.MemoryCreated{Entities: []string{"alice"}, Relations: len(a.Relations)}
		case core.RequestMemoryTraverse:
			return core.MemoryTraversed{Entities: []core.Entity{{Name: a.From}}}
		}
		return nil
	})
}

func toolResults(t *rapid.T, calls []core.ToolCall, stopOnError bool) core.ToolResults {
	out := make([]core.ToolResult, 0, len(calls))
	for _, c := range calls {
		r := core.ToolResult{CallID: c.ID}
		if rapid.IntRange(0, 4).Draw(t, "tool-fails") == 0 {
			r.Error = "tool failed"
		} else {
			r.Output = rapid.StringMatching(`[a-z0-9 ]{0,40}`).Draw(t, "output")
			if rapid.IntRange(0, 3).Draw(t, "has-source") == 0 {
				r.Sources = []string{"https://example.test/" + c.ID}
			}
		}
		out = append(out, r)
		if stopOnError && r.Error != "" {
			break // a shell that stops at the first error leaves the rest out
		}
	}
	perm := rapid.Permutation(out).Draw(t, "order")
	return core.ToolResults{Results: perm}
}

// Mismatched generates results that must not fit action a: the wrong kind,
// or tool results with an unknown, duplicate or missing call id. It returns
// nil when a is not a request.
func Mismatched(a core.Action) *rapid.Generator[core.Result] {
	return rapid.Custom(func(t *rapid.T) core.Result {
		shape := rapid.IntRange(0, 3).Draw(t, "mismatch")
		var calls []core.ToolCall
		switch a := a.(type) {
		case core.RequestToolCalls:
			calls = a.Calls
		case core.RequestExternalToolCalls:
			calls = a.Calls
		case core.RequestModelCall:
			return rapid.SampledFrom([]core.Result{core.ToolResults{}, core.MemoryHits{}, core.MemoryCreated{}}).Draw(t, "wrong-kind")
		case core.Complete, core.Fail:
			return nil
		default:
			return rapid.SampledFrom([]core.Result{core.ModelReply{Text: "x"}, core.ToolResults{}}).Draw(t, "wrong-kind")
		}
		ok := make([]core.ToolResult, len(calls))
		for i, c := range calls {
			ok[i] = core.ToolResult{CallID: c.ID, Output: "fine"}
		}
		switch shape {
		case 0:
			return core.ToolResults{Results: append(ok, core.ToolResult{CallID: "never-asked", Output: "x"})}
		case 1:
			i := rapid.IntRange(0, len(ok)-1).Draw(t, "dup")
			return core.ToolResults{Results: append(ok, ok[i])}
		case 2:
			// Missing a call that did not follow a failure: never allowed.
			return core.ToolResults{Results: ok[:len(ok)-1]}
		}
		return core.ModelReply{Text: "wrong kind"}
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
