package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

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

func TestNearMatch(t *testing.T) {
	cands := []string{"base", "exponent", "max_results", "query", "a"}
	for _, tc := range []struct{ name, want string }{
		{"BASE", "base"}, {"Base", "base"}, {"maxResults", "max_results"}, {"MAX-RESULTS", "max_results"},
		{"qurey", "query"}, {"querry", "query"}, {"exponnet", "exponent"}, {"exponents", "exponent"},
		{"b", ""}, {"bse", ""}, {"zeta", ""}, {"limit", ""}, {"A", "a"}, {strings.Repeat("x", 65), ""},
	} {
		if got := nearMatch(tc.name, cands); got != tc.want {
			t.Errorf("nearMatch(%q) = %q, want %q", tc.name, got, tc.want)
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

// genDupArgs draws argument objects with exactly one key given twice, at
// any depth, and the path of that key; written compactly or with spaces.
func genDupArgs(t *rapid.T) (string, string) {
	type node struct {
		keys []string
		vals []*node // nil: a scalar
		arr  bool
	}
	var objects []*node // every object node, to pick the duplicate's home
	var paths []argPath
	var build func(depth int, p argPath, arr bool) *node
	build = func(depth int, p argPath, arr bool) *node {
		n := &node{arr: arr}
		if !arr {
			objects = append(objects, n)
			paths = append(paths, p)
		}
		count := rapid.IntRange(0, 3).Draw(t, "members")
		for i := range count {
			var k string
			if !arr {
				k = fmt.Sprintf("k%d", i)
			}
			n.keys = append(n.keys, k)
			var child *node
			if depth < 3 && rapid.IntRange(0, 2).Draw(t, "nested") == 0 {
				cp := p.index(i)
				if !arr {
					cp = p.key(k)
				}
				child = build(depth+1, cp, rapid.Bool().Draw(t, "array"))
			}
			n.vals = append(n.vals, child)
		}
		return n
	}
	root := build(0, nil, false)
	at := rapid.IntRange(0, len(objects)-1).Draw(t, "dup-at")
	home := objects[at]
	var key string
	if len(home.keys) == 0 || rapid.Bool().Draw(t, "fresh key") {
		key = "dup"
		home.keys = append(home.keys, key, key)
		home.vals = append(home.vals, nil, nil)
	} else {
		i := rapid.IntRange(0, len(home.keys)-1).Draw(t, "dup-key")
		key = home.keys[i]
		home.keys = append(home.keys, key)
		home.vals = append(home.vals, nil)
	}
	sep := rapid.SampledFrom([]string{"", " ", "\n  "}).Draw(t, "space")
	var write func(b *strings.Builder, n *node)
	write = func(b *strings.Builder, n *node) {
		open, end := "{", "}"
		if n.arr {
			open, end = "[", "]"
		}
		b.WriteString(open)
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString("," + sep)
			}
			if !n.arr {
				b.WriteString(fmt.Sprintf("%q:%s", k, sep))
			}
			if n.vals[i] == nil {
				b.WriteString(fmt.Sprint(i))
			} else {
				write(b, n.vals[i])
			}
		}
		b.WriteString(end)
	}
	var b strings.Builder
	write(&b, root)
	return b.String(), paths[at].key(key).String()
}

// TestValidateAlwaysRefusesRepeatedKeys: a key given twice anywhere in the
// arguments is refused by name, whichever decoder reads them.
func TestValidateAlwaysRefusesRepeatedKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tools = []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","additionalProperties":true}`)}}
	rapid.Check(t, func(t *rapid.T) {
		args, path := genDupArgs(t)
		if !json.Valid([]byte(args)) {
			t.Fatalf("generated invalid JSON %s", args)
		}
		_, err := ValidateCall(cfg, NativeCall{ID: "c", Name: "f", Arguments: args})
		if !errors.Is(err, ErrInvalidCall) || !strings.Contains(err.Error(), fmt.Sprintf("argument %q is given more than once", path)) {
			t.Fatalf("%s: %v, want the key %s named", args, err, path)
		}
	})
}

func TestRepeatedKeyIgnoresSameKeysInDifferentObjects(t *testing.T) {
	for _, text := range []string{`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, `{}`, `[{"a":1}]`, `{"a":1,"b":`} {
		if p, dup := repeatedKey(text); dup {
			t.Errorf("%s: reported %s", text, p)
		}
	}
}
