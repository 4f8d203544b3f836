package schema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core/schema"
)

func TestOutputSchemaCheck(t *testing.T) {
	const user = `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string","minLength":1},` +
		`"tags":{"type":"array","items":{"type":"string"}}},"required":["id","name"]}`
	for _, c := range []struct {
		name, schema, output string
		want                 string // "" for a fit; else every part must be in the error
	}{
		{"fits", user, `{"id": 7, "name": "Sarah", "tags": ["a"]}`, ""},
		{"unknown fields are allowed unless closed", user, `{"id": 7, "name": "Sarah", "zip": "10001"}`, ""},
		{"no coercion", user, `{"id": "7", "name": "Sarah"}`, `field "id": expected an integer, found the string "7"`},
		{"missing", user, `{"name": "Sarah"}`, `missing required field "id"`},
		{"nested path", user, `{"id": 1, "name": "x", "tags": ["a", 2]}`, `field "tags[1]": expected a string`},
		{"every mismatch", user, `{"id": 1.5, "name": ""}`, `field "id"|field "name": expected a string of at least 1 character`},
		{"root type", user, `[1, 2]`, `the output: expected an object, found an array`},
		{"closed object", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a": "x", "b": 1}`,
			`unknown field "b" (the fields are: a)`},
		{"not JSON", user, `Sarah, id 7`, "the output is not JSON"},
		{"two values", user, `{"id": 1, "name": "a"} {}`, "more than one JSON value"},
		{"a string schema", `{"type":"string","enum":["yes","no"]}`, `"yes"`, ""},
		{"a string schema refuses", `{"type":"string","enum":["yes","no"]}`, `"maybe"`, `expected one of "yes", "no"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := schema.CompileOutput([]byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Check(c.output)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want a fit", err)
				}
				return
			}
			if err == nil || !errors.Is(err, schema.ErrOutput) {
				t.Fatalf("Check = %v, want ErrOutput", err)
			}
			for _, part := range strings.Split(c.want, "|") {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
			if strings.Contains(err.Error(), "argument") {
				t.Errorf("error %q speaks of arguments", err)
			}
		})
	}
}

func TestCompileOutputSchemaRefusesBadSchemas(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{``, "empty"},
		{`{"type":"object","allOf":[]}`, "allOf"},
		{`{"type":"strin"}`, "strin"},
		{`{"type":"string","pattern":"("}`, "pattern"},
		{`[1]`, "schema"},
	} {
		if _, err := schema.CompileOutput([]byte(c.schema)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CompileOutput(%s) = %v, want an error naming %q", c.schema, err, c.want)
		}
	}
}
