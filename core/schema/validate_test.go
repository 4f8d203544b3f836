package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// runSchemaArgs validates args (JSON text) against schema and returns the
// normalized arguments as canonical JSON, or the error text.
func runSchemaArgs(t *testing.T, schema, args string, reject bool) (string, string) {
	t.Helper()
	if err := checkSchema(json.RawMessage(schema)); err != nil {
		t.Fatalf("checkSchema(%s): %v", schema, err)
	}
	in, err := decodeArgs(args)
	if err != nil {
		t.Fatalf("decodeArgs(%s): %v", args, err)
	}
	out, err := validateArgs(Tool{Name: "t", Parameters: json.RawMessage(schema)}, in, reject)
	if err != nil {
		return "", err.Error()
	}
	raw, err := Canonical(out)
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	return string(raw), ""
}

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

func TestSchemaValidateArgs(t *testing.T) {
	for _, tc := range []struct {
		name, schema, args string
		reject             bool
		want               string // normalized args; empty when an error is expected
		err                string // the whole error text
	}{
		// types, never coerced
		{name: "string is not an integer", schema: searchArgsSchema, args: `{"query":"x","limit":"5"}`,
			err: `argument "limit": expected an integer, found the string "5"`},
		{name: "boolean is not a number", schema: `{"type":"object","properties":{"x":{"type":"number"}}}`, args: `{"x":true}`,
			err: `argument "x": expected a number, found the boolean true`},
		{name: "fraction is not an integer", schema: searchArgsSchema, args: `{"query":"x","limit":1.5}`,
			err: `argument "limit": expected an integer, found the number 1.5`},
		{name: "2.0 is an integer, written 2", schema: searchArgsSchema, args: `{"query":"x","limit":2.0}`,
			want: `{"limit":2,"query":"x"}`},
		{name: "exponent integer", schema: searchArgsSchema, args: `{"query":"x","limit":4e1}`,
			want: `{"limit":40,"query":"x"}`},
		{name: "an integer is a number", schema: `{"type":"object","properties":{"x":{"type":"number"}}}`, args: `{"x":3}`,
			want: `{"x":3}`},
		{name: "number keeps its text", schema: `{"type":"object","properties":{"x":{"type":"number"}}}`, args: `{"x":2.50}`,
			want: `{"x":2.50}`},
		{name: "number is not a string", schema: `{"type":"object","properties":{"x":{"type":"string"}}}`, args: `{"x":5}`,
			err: `argument "x": expected a string, found the number 5`},
		{name: "object is not an array", schema: `{"type":"object","properties":{"x":{"type":"array"}}}`, args: `{"x":{}}`,
			err: `argument "x": expected an array, found an object`},
		{name: "huge exponent", schema: `{"type":"object","properties":{"x":{"type":"number"}}}`, args: `{"x":1e999999}`,
			err: `argument "x": expected a number with an exponent between -400 and 400, found the number 1e999999`},

		// null only where allowed
		{name: "null not allowed", schema: searchArgsSchema, args: `{"query":null}`,
			err: `argument "query": expected a string, found null`},
		{name: "null in a type list", schema: `{"type":"object","properties":{"x":{"type":["string","null"]}}}`, args: `{"x":null}`,
			want: `{"x":null}`},
		{name: "nullable", schema: `{"type":"object","properties":{"x":{"type":"integer","nullable":true}}}`, args: `{"x":null}`,
			want: `{"x":null}`},
		{name: "type list mismatch", schema: `{"type":"object","properties":{"x":{"type":["string","integer","null"]}}}`, args: `{"x":[1]}`,
			err: `argument "x": expected a string, an integer or null, found an array of 1 item`},

		// required, defaults
		{name: "missing required", schema: searchArgsSchema, args: `{}`,
			err: `missing required argument "query"`},
		{name: "default injected", schema: searchArgsSchema, args: `{"query":"x"}`,
			want: `{"limit":5,"query":"x"}`},
		{name: "given value kept over default", schema: searchArgsSchema, args: `{"query":"x","limit":7}`,
			want: `{"limit":7,"query":"x"}`},
		{name: "no default for a required argument", schema: `{"type":"object","properties":{"x":{"type":"integer","default":1}},"required":["x"]}`, args: `{}`,
			err: `missing required argument "x"`},
		{name: "nested defaults", schema: filtersSchema, args: `{"filters":{"tags":[],"page":{}}}`,
			want: `{"filters":{"page":{"size":20},"sort":"asc","tags":[]}}`},
		{name: "no defaults in an absent object", schema: filtersSchema, args: `{}`,
			want: `{}`},
		{name: "nested required", schema: filtersSchema, args: `{"filters":{}}`,
			err: `missing required argument "filters.tags"`},

		// unknown arguments
		{name: "unknown dropped", schema: searchArgsSchema, args: `{"query":"x","foo":1}`,
			want: `{"limit":5,"query":"x"}`},
		{name: "unknown rejected by policy", schema: searchArgsSchema, args: `{"query":"x","foo":1}`, reject: true,
			err: `unknown argument "foo" (the arguments are: query, limit)`},
		{name: "nested unknown dropped", schema: filtersSchema, args: `{"filters":{"tags":["a"],"bogus":true,"page":{"zzz":1}}}`,
			want: `{"filters":{"page":{"size":20},"sort":"asc","tags":["a"]}}`},
		{name: "nested unknown rejected", schema: filtersSchema, args: `{"filters":{"tags":["a"],"bogus":true}}`, reject: true,
			err: `unknown argument "filters.bogus" (the arguments of "filters" are: tags, since, sort, page)`},
		{name: "additionalProperties false always rejects", schema: `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, args: `{"a":"x","b":1}`,
			err: `unknown argument "b" (the arguments are: a)`},
		{name: "additionalProperties true keeps", schema: `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, args: `{"a":"x","b":1}`, reject: true,
			want: `{"a":"x","b":1}`},
		{name: "additionalProperties schema checks extras", schema: `{"type":"object","additionalProperties":{"type":"integer"}}`, args: `{"a":1,"b":"2"}`,
			err: `argument "b": expected an integer, found the string "2"`},
		{name: "free-form nested object keeps its contents", schema: filtersSchema, args: `{"meta":{"k":[1,{"x":null}]}}`, reject: true,
			want: `{"meta":{"k":[1,{"x":null}]}}`},
		{name: "a tool without parameters", schema: ``, args: `{"x":1}`, reject: true,
			err: `unknown argument "x" (this tool takes no arguments)`},
		{name: "a tool without parameters drops", schema: `{"type":"object"}`, args: `{"x":1}`,
			want: `{}`},

		// enum, const
		{name: "enum", schema: `{"type":"object","properties":{"color":{"type":"string","enum":["red","green"]}}}`, args: `{"color":"blue"}`,
			err: `argument "color": expected one of "red", "green", found "blue"`},
		{name: "enum numbers by value", schema: `{"type":"object","properties":{"n":{"enum":[1,2]}}}`, args: `{"n":2.0}`,
			want: `{"n":2.0}`},
		{name: "enum without type", schema: `{"type":"object","properties":{"n":{"enum":[1,"a",null]}}}`, args: `{"n":"1"}`,
			err: `argument "n": expected one of 1, "a", null, found "1"`},
		{name: "const", schema: `{"type":"object","properties":{"v":{"const":"on"}}}`, args: `{"v":"off"}`,
			err: `argument "v": expected "on", found "off"`},

		// numbers
		{name: "minimum", schema: searchArgsSchema, args: `{"query":"x","limit":0}`,
			err: `argument "limit": expected an integer of at least 1, found 0`},
		{name: "maximum", schema: searchArgsSchema, args: `{"query":"x","limit":51}`,
			err: `argument "limit": expected an integer of at most 50, found 51`},
		{name: "exclusive bounds", schema: `{"type":"object","properties":{"p":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}}`, args: `{"p":1}`,
			err: `argument "p": expected a number less than 1, found 1`},
		{name: "exclusive minimum", schema: `{"type":"object","properties":{"p":{"type":"number","exclusiveMinimum":0}}}`, args: `{"p":0}`,
			err: `argument "p": expected a number greater than 0, found 0`},
		{name: "within bounds", schema: `{"type":"object","properties":{"p":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}}`, args: `{"p":0.999}`,
			want: `{"p":0.999}`},
		{name: "multipleOf", schema: `{"type":"object","properties":{"p":{"type":"number","multipleOf":0.5}}}`, args: `{"p":1.25}`,
			err: `argument "p": expected a multiple of 0.5, found 1.25`},

		// strings, in code points
		{name: "minLength", schema: searchArgsSchema, args: `{"query":""}`,
			err: `argument "query": expected a string of at least 1 character, found the string "" (0 characters)`},
		{name: "maxLength counts code points", schema: `{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, args: `{"s":"日本語"}`,
			want: `{"s":"日本語"}`},
		{name: "maxLength", schema: `{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, args: `{"s":"héllo"}`,
			err: `argument "s": expected a string of at most 3 characters, found the string "héllo" (5 characters)`},
		{name: "pattern", schema: filtersSchema, args: `{"filters":{"tags":[],"since":"yesterday"}}`,
			err: `argument "filters.since": expected a string matching the pattern ^[0-9]{4}-[0-9]{2}-[0-9]{2}$, found the string "yesterday"`},

		// arrays
		{name: "nested item type", schema: filtersSchema, args: `{"filters":{"tags":["a","b",3]}}`,
			err: `argument "filters.tags[2]": expected a string, found the number 3`},
		{name: "minItems", schema: `{"type":"object","properties":{"a":{"type":"array","minItems":2}}}`, args: `{"a":[1]}`,
			err: `argument "a": expected at least 2 items, found 1`},
		{name: "maxItems", schema: `{"type":"object","properties":{"a":{"type":"array","maxItems":1}}}`, args: `{"a":[1,2]}`,
			err: `argument "a": expected at most 1 item, found 2`},
		{name: "uniqueItems", schema: `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`, args: `{"a":[1,2,1.0]}`,
			err: `argument "a": expected unique items, found item 2 equal to item 0`},
		{name: "prefixItems", schema: `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"number"},{"type":"string"}],"items":false}}}`, args: `{"p":[1,2,3]}`,
			err: `argument "p[1]": expected a string, found the number 2; argument "p[2]" is not allowed here`},
		{name: "objects in arrays", schema: `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer","default":0}},"required":["id"],"additionalProperties":{"type":"string"}}}}}`, args: `{"xs":[{"id":"a"},{"n":1.0,"id":"b"}]}`,
			want: `{"xs":[{"id":"a","n":0},{"id":"b","n":1}]}`},

		// anyOf, oneOf
		{name: "anyOf of types", schema: `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, args: `{"x":true}`,
			err: `argument "x": expected a string or an integer, found the boolean true`},
		{name: "anyOf match", schema: `{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, args: `{"x":3}`,
			want: `{"x":3}`},
		{name: "anyOf of shapes", schema: `{"type":"object","properties":{"x":{"anyOf":[{"type":"string","minLength":3},{"type":"integer"}]}}}`, args: `{"x":"ab"}`,
			err: `argument "x" matches none of the allowed forms (form 1: argument "x": expected a string of at least 3 characters, found the string "ab" (2 characters); form 2: argument "x": expected an integer, found the string "ab")`},
		{name: "oneOf twice", schema: `{"type":"object","properties":{"x":{"oneOf":[{"type":"number"},{"type":"integer"}]}}}`, args: `{"x":3}`,
			err: `argument "x" matches more than one of the allowed forms (forms 1 and 2); it must match exactly one`},
		{name: "oneOf once", schema: `{"type":"object","properties":{"x":{"oneOf":[{"type":"number"},{"type":"integer"}]}}}`, args: `{"x":3.5}`,
			want: `{"x":3.5}`},

		// every error, sorted by path
		{name: "all errors sorted by path", schema: filtersSchema + ``, reject: true,
			args: `{"zeta":1,"filters":{"tags":[1,"a","b","c","d","e","f","g","h","i",true],"sort":"up","page":{"size":"big"}}}`,
			err: `argument "filters.page.size": expected an integer, found the string "big"; ` +
				`argument "filters.sort": expected one of "asc", "desc", found "up"; ` +
				`argument "filters.tags[0]": expected a string, found the number 1; ` +
				`argument "filters.tags[10]": expected a string, found the boolean true; ` +
				`unknown argument "zeta" (the arguments are: filters, meta)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runSchemaArgs(t, tc.schema, tc.args, tc.reject)
			if got != tc.want || err != tc.err {
				t.Errorf("validate %s\n got  %s\n err  %s\n want %s\n err  %s", tc.args, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestSchemaValidateArgsLeavesInputAlone(t *testing.T) {
	in, err := decodeArgs(`{"filters":{"tags":["a"],"extra":1,"page":{"size":2.0}}}`)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Canonical(in)
	if _, err := validateArgs(Tool{Parameters: json.RawMessage(filtersSchema)}, in, false); err != nil {
		t.Fatal(err)
	}
	after, _ := Canonical(in)
	if string(before) != string(after) {
		t.Errorf("input changed:\n%s\n%s", before, after)
	}
}

func TestSchemaCheckSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema, err string // err: a part of the error; empty: valid
	}{
		{"empty", ``, ""},
		{"null", `null`, ""},
		{"plain object", `{"type":"object"}`, ""},
		{"no type", `{"properties":{"a":{}}}`, ""},
		{"annotations ignored", `{"type":"object","title":"t","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"type":"string","format":"date","description":"d","examples":["x"]}}}`, ""},
		{"not an object", `[]`, "must be a JSON object"},
		{"invalid JSON", `{"type":`, "must be a schema"},
		{"root not object", `{"type":"string"}`, `type must be "object"`},
		{"root nullable", `{"type":["object","null"]}`, `type must be "object"`},
		{"bad type name", `{"type":"object","properties":{"a":{"type":"int"}}}`, `properties.a: type "int" is not one of`},
		{"empty type list", `{"type":"object","properties":{"a":{"type":[]}}}`, "properties.a: type must not be an empty array"},
		{"duplicate type", `{"type":"object","properties":{"a":{"type":["string","string"]}}}`, `type names "string" twice`},
		{"lookahead pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"^(?=a)"}}}`, `properties.a: pattern "^(?=a)" is not a regular expression stepwise supports`},
		{"backreference", `{"type":"object","properties":{"a":{"type":"string","pattern":"(a)\\1"}}}`, "Go RE2 syntax"},
		{"ref unsupported", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`, `properties.a: keyword "$ref" is not supported`},
		{"allOf unsupported", `{"type":"object","allOf":[{}]}`, `keyword "allOf" is not supported`},
		{"minimum a string", `{"type":"object","properties":{"a":{"type":"integer","minimum":"1"}}}`, "properties.a: minimum must be a number"},
		{"draft-4 exclusiveMinimum", `{"type":"object","properties":{"a":{"type":"integer","exclusiveMinimum":true}}}`, "exclusiveMinimum must be a number"},
		{"negative minLength", `{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`, "minLength must be a non-negative integer"},
		{"fractional maxItems", `{"type":"object","properties":{"a":{"type":"array","maxItems":1.5}}}`, "maxItems must be a non-negative integer"},
		{"min above max", `{"type":"object","properties":{"a":{"type":"integer","minimum":5,"maximum":1}}}`, "minimum 5 is greater than maximum 1"},
		{"zero multipleOf", `{"type":"object","properties":{"a":{"type":"number","multipleOf":0}}}`, "multipleOf must be greater than 0"},
		{"required not declared", `{"type":"object","properties":{"a":{}},"required":["b"]}`, `required argument "b" is not among the properties`},
		{"required of a parameterless tool", `{"type":"object","required":["b"]}`, `required argument "b" is not among the properties`},
		{"required not strings", `{"type":"object","required":[1]}`, "required must be an array of strings"},
		{"items as a tuple", `{"type":"object","properties":{"a":{"type":"array","items":[{}]}}}`, "items must be one schema; use prefixItems"},
		{"bad nested items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"strng"}}}}`, `properties.a.items: type "strng"`},
		{"empty enum", `{"type":"object","properties":{"a":{"enum":[]}}}`, "enum must be a non-empty array"},
		{"empty anyOf", `{"type":"object","properties":{"a":{"anyOf":[]}}}`, "anyOf must be a non-empty array of schemas"},
		{"bad anyOf branch", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"minimum":"x"}]}}}`, "properties.a.anyOf[1]: minimum must be a number"},
		{"properties not an object", `{"type":"object","properties":[]}`, "properties must be an object of schemas"},
		{"schema not an object", `{"type":"object","properties":{"a":3}}`, "properties.a: must be a schema"},
		{"every problem named", `{"type":"object","properties":{"a":{"type":"int"},"b":{"pattern":"("}}}`, `properties.a: type "int" is not one of object, array, string, integer, number, boolean, null; properties.b: pattern`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSchema(json.RawMessage(tc.schema))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("checkSchema(%s): %v", tc.schema, err)
			case tc.err != "" && err == nil:
				t.Errorf("checkSchema(%s) accepted it, want an error containing %q", tc.schema, tc.err)
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Errorf("checkSchema(%s):\n got  %v\n want %q in it", tc.schema, err, tc.err)
			}
		})
	}
}

func TestSchemaPathOrder(t *testing.T) {
	paths := []argPath{
		argPath{}.key("a").index(10),
		argPath{}.key("a").index(2),
		argPath{}.key("a"),
		argPath{}.key("b").key("c d"),
		argPath{},
	}
	want := []string{"", "a", "a[2]", "a[10]", `b["c d"]`}
	for i := range paths {
		for j := i + 1; j < len(paths); j++ {
			if comparePaths(paths[i], paths[j]) < 0 {
				paths[i], paths[j] = paths[j], paths[i]
			}
		}
	}
	for i := range paths {
		if got := paths[len(paths)-1-i].String(); got != want[i] {
			t.Errorf("position %d: got %q, want %q", i, got, want[i])
		}
	}
}

// TestStrictNumbers: with StrictNumbers an integer written with a fraction
// or an exponent is refused where the schema says integer (and only there);
// without, JSON Schema's rule holds and it is normalized.
func TestStrictNumbers(t *testing.T) {
	s, err := Compile([]byte(`{"type": "object", "properties": {"limit": {"type": "integer"}, "ratio": {"type": "number"},
		"ids": {"type": "array", "items": {"type": "integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(text string) map[string]any {
		args, err := DecodeArgs(text)
		if err != nil {
			t.Fatal(err)
		}
		return args
	}
	for _, text := range []string{`{"limit": 5.0}`, `{"limit": 5e0}`, `{"limit": 50E-1}`, `{"ids": [1, 2.0]}`} {
		if _, err := s.Check(decode(text), Checks{StrictNumbers: true}); err == nil || !strings.Contains(err.Error(), "without a fraction or an exponent") {
			t.Errorf("%s under strict numbers: %v", text, err)
		}
		got, err := s.Validate(decode(text), false)
		if err != nil {
			t.Errorf("%s without strict numbers: %v", text, err)
		}
		if b, _ := json.Marshal(got); strings.ContainsAny(string(b), ".eE") {
			t.Errorf("%s was not normalized: %s", text, b)
		}
	}
	for _, text := range []string{`{"limit": 5}`, `{"ratio": 5.0}`, `{"ratio": 5e3}`, `{"ids": [1, 2]}`, `{"limit": -0}`} {
		if _, err := s.Check(decode(text), Checks{StrictNumbers: true}); err != nil {
			t.Errorf("%s under strict numbers: %v", text, err)
		}
	}
}
