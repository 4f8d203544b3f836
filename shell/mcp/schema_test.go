package mcp

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/mcptest"
)

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{name: "empty", in: ``, want: ``},
		{name: "null", in: `null`, want: ``},
		{
			name: "kept as is",
			in:   `{"type":"object","properties":{"a":{"type":["string","null"],"minLength":1}},"required":["a"],"additionalProperties":false}`,
			want: `{"additionalProperties":false,"properties":{"a":{"minLength":1,"type":["string","null"]}},"required":["a"],"type":"object"}`,
		},
		{
			name: "annotations dropped, property names kept",
			in:   `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"T","$comment":"c","type":"object","properties":{"title":{"type":"string","title":"Title","format":"email","examples":["a"],"readOnly":true,"writeOnly":false,"deprecated":true,"x-vendor":1,"description":"d"}}}`,
			want: `{"properties":{"title":{"description":"d","type":"string"}},"type":"object"}`,
		},
		{
			name: "$defs inlined, sibling description wins",
			in:   `{"type":"object","properties":{"p":{"$ref":"#/$defs/P","description":"outer"},"q":{"$ref":"#/$defs/P"}},"$defs":{"P":{"type":"object","description":"inner","properties":{"n":{"type":"integer"}}}}}`,
			want: `{"properties":{"p":{"description":"outer","properties":{"n":{"type":"integer"}},"type":"object"},"q":{"description":"inner","properties":{"n":{"type":"integer"}},"type":"object"}},"type":"object"}`,
		},
		{
			name: "definitions and nested refs",
			in:   `{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{"type":"array","items":{"$ref":"#/definitions/B"}},"B":{"type":"string","enum":["x","y"]}}}`,
			want: `{"properties":{"a":{"items":{"enum":["x","y"],"type":"string"},"type":"array"}},"type":"object"}`,
		},
		{
			name: "root $ref",
			in:   `{"$ref":"#/$defs/Args","$defs":{"Args":{"type":"object","properties":{"x":{"type":"number"}}}}}`,
			want: `{"properties":{"x":{"type":"number"}},"type":"object"}`,
		},
		{
			name: "pointer into properties, escaped",
			in:   `{"type":"object","properties":{"a/b":{"type":"boolean"},"c":{"$ref":"#/properties/a~1b"}}}`,
			want: `{"properties":{"a/b":{"type":"boolean"},"c":{"type":"boolean"}},"type":"object"}`,
		},
		{
			name: "allOf merged",
			in:   `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer"},"a":{"maxLength":3}},"required":["b","a"]}]}`,
			want: `{"properties":{"a":{"maxLength":3,"type":"string"},"b":{"type":"integer"}},"required":["a","b"],"type":"object"}`,
		},
		{
			name: "allOf with one $ref and a default (pydantic v1)",
			in:   `{"type":"object","properties":{"c":{"allOf":[{"$ref":"#/definitions/C"}],"default":"red"}},"definitions":{"C":{"title":"C","enum":["red","blue"],"type":"string"}}}`,
			want: `{"properties":{"c":{"default":"red","enum":["red","blue"],"type":"string"}},"type":"object"}`,
		},
		{
			name: "types intersected",
			in:   `{"type":"object","properties":{"n":{"type":["number","null"],"allOf":[{"type":"integer"}]}}}`,
			want: `{"properties":{"n":{"type":"integer"}},"type":"object"}`,
		},
		{
			name: "draft-07 tuple",
			in:   `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}}}`,
			want: `{"properties":{"t":{"items":false,"prefixItems":[{"type":"string"},{"type":"integer"}],"type":"array"}},"type":"object"}`,
		},
		{
			name: "draft-04 exclusive bounds",
			in:   `{"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":false}}}`,
			want: `{"properties":{"n":{"exclusiveMinimum":0,"maximum":10,"type":"number"}},"type":"object"}`,
		},
		{
			name: "numbers kept exactly",
			in:   `{"type":"object","properties":{"n":{"type":"number","multipleOf":0.01,"maximum":12345678901234567890}}}`,
			want: `{"properties":{"n":{"maximum":12345678901234567890,"multipleOf":0.01,"type":"number"}},"type":"object"}`,
		},
		{
			name: "boolean schemas",
			in:   `{"type":"object","properties":{"any":true,"none":false},"additionalProperties":{"type":"string"}}`,
			want: `{"additionalProperties":{"type":"string"},"properties":{"any":true,"none":false},"type":"object"}`,
		},
		{
			name: "unused bad definitions are dropped",
			in:   `{"type":"object","$defs":{"X":{"not":{}}}}`,
			want: `{"type":"object"}`,
		},
		{name: "recursive", in: `{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}}}`, err: `"#/$defs/N" is recursive`},
		{name: "root recursion", in: `{"type":"object","properties":{"self":{"$ref":"#"}}}`, err: `"#" is recursive`},
		{name: "remote ref", in: `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, err: "only local references"},
		{name: "anchor ref", in: `{"type":"object","properties":{"a":{"$ref":"#foo"}}}`, err: "anchors are not supported"},
		{name: "missing ref", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/Nope"}}}`, err: `properties.a.$ref: "#/$defs/Nope": not found`},
		{name: "not", in: `{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, err: `properties.a: keyword "not" is not supported`},
		{name: "patternProperties", in: `{"type":"object","patternProperties":{"^x":{}}}`, err: `keyword "patternProperties" is not supported`},
		{name: "unsupported inside a def", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"object","minProperties":1}}}`, err: `(#/$defs/A): keyword "minProperties"`},
		{name: "conflict", in: `{"type":"object","allOf":[{"maxLength":1},{"maxLength":2}]}`, err: `conflicting values for "maxLength"`},
		{name: "no common type", in: `{"type":"object","properties":{"a":{"type":"string","allOf":[{"type":"integer"}]}}}`, err: "nothing in common"},
		{name: "not an object", in: `[1]`, err: "must be a JSON object"},
		{name: "not JSON", in: `{`, err: "not JSON"},
		{name: "bad subschema", in: `{"type":"object","properties":{"a":3}}`, err: "properties.a: must be a schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeSchema(json.RawMessage(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("NormalizeSchema(%s) = %s, %v; want error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeSchema(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("NormalizeSchema(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			if err := CheckSpec(core.Tool{Name: "t", Parameters: got}); err != nil {
				t.Fatalf("the core refuses %s: %v", got, err)
			}
			again, err := NormalizeSchema(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %s -> %s, %v", got, again, err)
			}
		})
	}
}

// TestNormalizeGenerated feeds the schemas the SDK generates from Go structs
// (as mcp.AddTool does) and the test server's hand-written ones.
func TestNormalizeGenerated(t *testing.T) {
	gen := func(s *jsonschema.Schema, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	schemas := map[string]string{
		"echo":   gen(jsonschema.For[mcptest.EchoIn](nil)),
		"add":    gen(jsonschema.For[mcptest.AddIn](nil)),
		"fail":   gen(jsonschema.For[mcptest.FailIn](nil)),
		"nested": gen(jsonschema.For[mcptest.NestedIn](nil)),
		"empty":  gen(jsonschema.For[struct{}](nil)),
		"refs":   mcptest.RefsSchema,
	}
	for name, raw := range schemas {
		t.Run(name, func(t *testing.T) {
			if err := CheckSpec(core.Tool{Name: name, Parameters: json.RawMessage(raw)}); err != nil {
				t.Logf("the core refuses it as generated (%v); normalizing", err)
			}
			got, err := NormalizeSchema(json.RawMessage(raw))
			if err != nil {
				t.Fatalf("NormalizeSchema(%s): %v", raw, err)
			}
			if err := CheckSpec(core.Tool{Name: name, Parameters: got}); err != nil {
				t.Fatalf("the core refuses %s: %v", got, err)
			}
		})
	}
	if _, err := NormalizeSchema(json.RawMessage(mcptest.UnsupportedSchema)); err == nil {
		t.Fatal("UnsupportedSchema was accepted")
	}
}

func TestNormalizeRefs(t *testing.T) {
	got, err := NormalizeSchema(json.RawMessage(mcptest.RefsSchema))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{` +
		`"color":{"default":"red","enum":["red","green"],"type":"string"},` +
		`"members":{"items":{"properties":{"email":{"type":["string","null"]},"name":{"type":"string"}},"required":["name"],"type":"object"},"type":"array"},` +
		`"owner":{"description":"who owns it","properties":{"email":{"type":["string","null"]},"name":{"type":"string"}},"required":["name"],"type":"object"}},` +
		`"required":["owner"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestNormalizeBlowup(t *testing.T) {
	// Each definition uses the previous one twice: 2^20 nodes once inlined.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/D20"}},"$defs":{"D0":{"type":"string"}`)
	for i := 1; i <= 20; i++ {
		b.WriteString(`,"D` + strconv.Itoa(i) + `":{"type":"object","properties":{"a":{"$ref":"#/$defs/D` + strconv.Itoa(i-1) + `"},"b":{"$ref":"#/$defs/D` + strconv.Itoa(i-1) + `"}}}`)
	}
	b.WriteString(`}}`)
	if _, err := NormalizeSchema(json.RawMessage(b.String())); err == nil || !strings.Contains(err.Error(), "after inlining") {
		t.Fatalf("err = %v, want a size error", err)
	}
}

func FuzzNormalizeSchema(f *testing.F) {
	f.Add(mcptest.RefsSchema)
	f.Add(mcptest.UnsupportedSchema)
	f.Add(`{"type":"object","allOf":[{"$ref":"#"}]}`)
	f.Add(`{"type":"object","properties":{"t":{"items":[true],"additionalItems":{"$ref":"#/properties/t"}}}}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NormalizeSchema(json.RawMessage(in))
		if err != nil {
			return
		}
		if len(got) > 0 && !json.Valid(got) {
			t.Fatalf("invalid JSON %q", got)
		}
		again, err := NormalizeSchema(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("not idempotent: %s -> %s, %v", got, again, err)
		}
	})
}
