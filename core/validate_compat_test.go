package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// Real-world schemas (MCP servers, OpenAPI exports) carry defaults that do
// not fit their type. Such a default is dropped with a warning: the tool is
// usable, the default is never injected and the docs do not show it.
// Real-world schemas (MCP servers, OpenAPI exports) carry defaults that do
// not fit their type. Such a default is dropped with a warning: the tool is
// usable, the default is never injected and the docs do not show it.
func TestSchemaDefaultThatDoesNotFitIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name, schema, args, want, warning string
	}{
		{"a string for a boolean", `{"type":"object","properties":{"flag":{"type":"boolean","default":"false"},"n":{"type":"integer","default":2}}}`, `{}`, `{"n":2}`,
			`properties.flag: default "false" is ignored: it does not fit the schema (expected a boolean, found the string "false")`},
		{"null for a string", `{"type":"object","properties":{"s":{"type":"string","default":null}}}`, `{}`, `{}`,
			`properties.s: default null is ignored: it does not fit the schema (expected a string, found null)`},
		{"wrong type", `{"type":"object","properties":{"a":{"type":"integer","default":"5"}}}`, `{}`, `{}`,
			`properties.a: default "5" is ignored: it does not fit the schema (expected an integer, found the string "5")`},
		{"breaks a rule", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer","default":0,"minimum":1}},"default":{}}}}`, `{}`, `{"o":{}}`,
			"properties.o.properties.n: default 0 is ignored: it does not fit the schema (expected an integer of at least 1, found 0)"},
		{"an unknown key", `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{}},"default":{"b":1}}}}`, `{}`, `{}`,
			`properties.o: default {"b":1} is ignored: it does not fit the schema (unknown argument "b" (the arguments are: a))`},
		{"in an array's items", `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string","default":7}}}}}}`, `{"xs":[{}]}`, `{"xs":[{}]}`,
			`properties.xs.items.properties.k: default 7 is ignored`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := Tool{Name: "t", Parameters: json.RawMessage(tc.schema)}
			cfg := DefaultConfig()
			cfg.Tools = []Tool{tool}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			w := cfg.Warnings()
			if len(w) != 1 || !strings.HasPrefix(w[0], `tool "t": parameters: `+tc.warning) {
				t.Errorf("Warnings:\n got %q\nwant %q", w, `tool "t": parameters: `+tc.warning)
			}
			got, err := ValidateCall(cfg, NativeCall{ID: "c", Name: "t", Arguments: tc.args})
			if err != nil || string(got.Args) != tc.want {
				t.Errorf("ValidateCall(%s) = %s, %v; want %s", tc.args, got.Args, err, tc.want)
			}
			for _, f := range []Format{FormatFenced, FormatXML, FormatHelpers, FormatJSON, FormatAuto} {
				cfg.Format = f
				docs := ToolDocs(cfg)
				for _, bad := range []string{`"default":"false"`, `"default":null`, `"default":"5"`, `"default":0`, `"default":{"b":1}`, `"default":7`,
					`default: "false"`, "default: null", "default: 0", "= False", "= None", `= "5"`, "= 7"} {
					if strings.Contains(docs, bad) {
						t.Errorf("%s docs show the dropped default (%s):\n%s", f, bad, docs)
					}
				}
			}
		})
	}
	cfg := DefaultConfig()
	cfg.Tools = []Tool{{Name: "ok", Parameters: json.RawMessage(searchArgsSchema)}}
	if w := cfg.Warnings(); w != nil {
		t.Errorf("a sound schema warns: %q", w)
	}
	cfg.Format = FormatFenced
	if docs := ToolDocs(cfg); !strings.Contains(docs, "limit (integer, optional, default: 5, minimum 1, maximum 50)") {
		t.Errorf("a sound default is documented:\n%s", docs)
	}
}

// A schema that dropped nothing is shown exactly as written (compacted):
// the docs of every valid agent are unchanged.
func TestSchemaDocParamsUnchangedWithoutDroppedDefaults(t *testing.T) {
	for _, schema := range []string{searchArgsSchema, filtersSchema, "", `{"type": "object",  "properties": {"a": {"default": "\u00e9"}}}`} {
		tool := Tool{Name: "t", Parameters: json.RawMessage(schema)}
		if got, want := docParams(tool), renderArgsJSON(schema); got != want {
			t.Errorf("docParams(%s) = %s, want %s", schema, got, want)
		}
	}
}

// When the model misspells a required argument, the unknown one is dropped
// and the required one is missing: the correction names both.
func TestValidateNamesTheDroppedArgumentOfAMissingOne(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"base":{"type":"integer"},"exp":{"type":"integer"},"opts":{"type":"object","properties":{"mode":{"type":"string"}},"required":["mode"]}},"required":["base","exp"]}`)
	for _, tc := range []struct {
		args   string
		reject bool
		want   string
	}{
		{`{"BASE":2,"exp":3}`, false, `missing required argument "base" (the unknown argument "BASE" was ignored: did you mean "base"?)`},
		{`{"foo":2,"exp":3}`, false, `missing required argument "base" (the unknown argument "foo" was ignored)`},
		{`{"foo":2,"bar":3}`, false, `missing required argument "base" (the unknown arguments "bar" and "foo" were ignored); missing required argument "exp" (the unknown arguments "bar" and "foo" were ignored)`},
		{`{"base":2,"exp":3,"opts":{"MODE":"x"}}`, false, `missing required argument "opts.mode" (the unknown argument "opts.MODE" was ignored: did you mean "opts.mode"?)`},
		{`{"base":2}`, false, `missing required argument "exp"`},
		{`{"BASE":2,"exp":3}`, true, `unknown argument "BASE" (did you mean "base"? the arguments are: base, exp, opts); missing required argument "base"`},
	} {
		cfg := DefaultConfig()
		cfg.Policy.RejectUnknownArgs = tc.reject
		cfg.Tools = []Tool{{Name: "pow", Parameters: schema}}
		_, err := ValidateCall(cfg, NativeCall{ID: "c1", Name: "pow", Arguments: tc.args})
		if want := "invalid tool call: pow (call c1): " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s (reject %t):\n got %v\nwant %s", tc.args, tc.reject, err, want)
		}
	}
}

func TestValidateRefusesRepeatedKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tools = []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{},"o":{}}}`)}}
	for _, tc := range []struct{ args, key string }{
		{`{"a":1,"a":2}`, "a"},
		{`{"a" : 1 ,  "a" : 1}`, "a"},
		{`{"o":{"x":[{"k":1},{"k":1,"k":2}]},"a":1,"a":2}`, "o.x[1].k"},
		{`{"o":{"y":1},"o":{"y":2}}`, "o"},
	} {
		_, err := ValidateCall(cfg, NativeCall{ID: "c1", Name: "f", Arguments: tc.args})
		want := fmt.Sprintf(`invalid tool call: f (call c1): argument %q is given more than once; give each argument once`, tc.key)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tc.args, err, want)
		}
	}
}

// The schemas the tests of tool docs and validation share.
const (
	searchArgsSchema = `{"type":"object","properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":50,"default":5}},"required":["query"]}`
	filtersSchema    = `{"type":"object","properties":{
		"filters":{"type":"object","properties":{
			"tags":{"type":"array","items":{"type":"string"}},
			"since":{"type":"string","pattern":"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
			"sort":{"type":"string","enum":["asc","desc"],"default":"asc"},
			"page":{"type":"object","properties":{"size":{"type":"integer","default":20},"cursor":{"type":["string","null"]}}}
		},"required":["tags"]},
		"meta":{"type":"object"}
	}}`
)

func TestSchemaConfigValidateNamesTheTool(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tools = []Tool{{Name: "find", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","pattern":"(?!x)"}}}`)}}
	err := cfg.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `tools[0] "find": parameters: properties.q: pattern "(?!x)"`) {
		t.Errorf("Validate: %v", err)
	}
}

func TestSchemaValidateCall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tools = []Tool{
		{Name: "search", Parameters: json.RawMessage(searchArgsSchema)},
		{Name: "noop"},
	}
	cfg.Memory.Tools = true
	for _, tc := range []struct {
		name     string
		reject   bool
		call     NativeCall
		wantArgs string
		err      string
	}{
		{name: "unknown tool names the tools", call: NativeCall{ID: "c1", Name: "serch", Arguments: `{}`},
			err: `invalid tool call: unknown tool "serch"; the tools are: search, noop, memory_search, memory_create, memory_traverse`},
		{name: "arguments not an object", call: NativeCall{ID: "c1", Name: "search", Arguments: `["x"]`},
			err: `invalid tool call: search (call c1): arguments must be a JSON object, found an array`},
		{name: "arguments not JSON", call: NativeCall{ID: "c1", Name: "search", Arguments: `{"query":`},
			err: `invalid tool call: search (call c1): arguments are not valid JSON: unexpected EOF`},
		{name: "every problem, naming the tool", call: NativeCall{ID: "c2", Name: "search", Arguments: `{"limit":"5"}`},
			err: `invalid tool call: search (call c2): argument "limit": expected an integer, found the string "5"; missing required argument "query"`},
		{name: "normalized", call: NativeCall{ID: "c3", Name: "search", Arguments: `{"query":"q","extra":[1]}`},
			wantArgs: `{"limit":5,"query":"q"}`},
		{name: "unknown refused by policy", reject: true, call: NativeCall{ID: "c3", Name: "search", Arguments: `{"query":"q","extra":[1]}`},
			err: `invalid tool call: search (call c3): unknown argument "extra" (the arguments are: query, limit)`},
		{name: "empty arguments", call: NativeCall{ID: "c4", Name: "noop", Arguments: ``},
			wantArgs: `{}`},
		{name: "memory defaults", call: NativeCall{ID: "c5", Name: ToolMemorySearch, Arguments: `{"query":"sarah"}`},
			wantArgs: `{"limit":5,"query":"sarah"}`},
		{name: "memory closed schema", call: NativeCall{ID: "c6", Name: ToolMemoryTraverse, Arguments: `{"from":"a","depth":9,"hops":1}`},
			err: `invalid tool call: memory_traverse (call c6): argument "depth": expected an integer of at most 5, found 9; unknown argument "hops" (the arguments are: from, relation, depth)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfg
			cfg.Policy.RejectUnknownArgs = tc.reject
			got, err := ValidateCall(cfg, tc.call)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, ErrInvalidCall) {
					t.Errorf("ValidateCall:\n got  %v\n want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ValidateCall: %v", err)
			}
			if string(got.Args) != tc.wantArgs || got.ID != tc.call.ID || got.Name != tc.call.Name {
				t.Errorf("ValidateCall = %+v (args %s), want args %s", got, got.Args, tc.wantArgs)
			}
		})
	}
}

// The memory tools' parameter schemas are sound: they compile with no
// warning.
func TestMemoryToolSchemasCompile(t *testing.T) {
	for _, tool := range memoryTools {
		s, err := schema.Compile(tool.Parameters)
		if err != nil {
			t.Errorf("%s: %v", tool.Name, err)
		} else if w := s.Warnings(); len(w) > 0 {
			t.Errorf("%s: %q", tool.Name, w)
		}
	}
}

// TestPolicyStrictNumbers: Policy.StrictNumbers reaches the validator
// (the edison preset sets it): "limit": 5.0 is a correction for the model.
func TestPolicyStrictNumbers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tools = []Tool{{Name: "search", Parameters: json.RawMessage(`{"type": "object", "properties": {"limit": {"type": "integer"}}}`)}}
	call := NativeCall{ID: "c1", Name: "search", Arguments: `{"limit": 5.0}`}
	if got, err := ValidateCall(cfg, call); err != nil || string(got.Args) != `{"limit":5}` {
		t.Fatalf("without strict numbers: %s %v", got.Args, err)
	}
	cfg.Policy.StrictNumbers = true
	if _, err := ValidateCall(cfg, call); !errors.Is(err, ErrInvalidCall) || !strings.Contains(err.Error(), `argument "limit": expected an integer written without a fraction or an exponent, found 5.0`) {
		t.Fatalf("with strict numbers: %v", err)
	}
}
