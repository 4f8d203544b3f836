package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genSchema is a generated schema node: one JSON type, maybe nullable, with
// nested properties (object) or items (array).
type genSchema struct {
	typ      string
	nullable bool
	props    []genProp
	items    *genSchema
}

type genProp struct {
	name     string
	node     *genSchema
	required bool
	def      any // nil: no default
}

var genTypes = []string{"object", "array", "string", "integer", "number", "boolean", "null"}

func drawSchema(t *rapid.T, depth int, label string) *genSchema {
	types := genTypes
	if depth == 0 {
		types = genTypes[2:]
	}
	n := &genSchema{typ: rapid.SampledFrom(types).Draw(t, label+".type")}
	n.nullable = n.typ != "null" && rapid.Bool().Draw(t, label+".nullable")
	switch n.typ {
	case "object":
		n.props = drawProps(t, depth-1, label, 0)
	case "array":
		n.items = drawSchema(t, depth-1, label+"[]")
	}
	return n
}

func drawProps(t *rapid.T, depth int, label string, minProps int) []genProp {
	names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9_]{0,5}`), minProps, 4, rapid.ID).Draw(t, label+".names")
	props := make([]genProp, len(names))
	for i, name := range names {
		p := genProp{name: name, node: drawSchema(t, depth, label+"."+name)}
		p.required = rapid.Bool().Draw(t, label+"."+name+".required")
		if !p.required && rapid.Bool().Draw(t, label+"."+name+".hasDefault") {
			p.def = drawValid(t, p.node, false, label+"."+name+".default")
		}
		props[i] = p
	}
	return props
}

// jsonSchema renders the node as a JSON Schema value.
func (n *genSchema) jsonSchema() map[string]any {
	s := map[string]any{"type": n.typ}
	if n.nullable {
		s["type"] = []any{n.typ, "null"}
	}
	if n.typ == "object" {
		props := map[string]any{}
		var req []any
		for _, p := range n.props {
			ps := p.node.jsonSchema()
			if p.def != nil {
				ps["default"] = p.def
			}
			props[p.name] = ps
			if p.required {
				req = append(req, p.name)
			}
		}
		s["properties"] = props
		if req != nil {
			s["required"] = req
		}
	}
	if n.items != nil {
		s["items"] = n.items.jsonSchema()
	}
	return s
}

// drawValid draws a value the node accepts; with unknown, objects may carry
// properties the schema does not declare.
func drawValid(t *rapid.T, n *genSchema, unknown bool, label string) any {
	if n.nullable && rapid.IntRange(0, 4).Draw(t, label+".null") == 0 {
		return nil
	}
	switch n.typ {
	case "string":
		return rapid.String().Draw(t, label)
	case "integer":
		i := rapid.Int64().Draw(t, label)
		form := rapid.SampledFrom([]string{"%d", "%d.0", "%de0"}).Draw(t, label+".form") // 2, 2.0 and 2e0 are all integers
		return json.Number(fmt.Sprintf(form, i))
	case "number":
		return json.Number(rapid.SampledFrom([]string{"0", "-1", "3.25", "1e-3", "6.02e23", "-0.5"}).Draw(t, label))
	case "boolean":
		return rapid.Bool().Draw(t, label)
	case "null":
		return nil
	case "array":
		out := []any{}
		for i := range rapid.IntRange(0, 3).Draw(t, label+".len") {
			out = append(out, drawValid(t, n.items, unknown, fmt.Sprintf("%s[%d]", label, i)))
		}
		return out
	}
	out := map[string]any{}
	for _, p := range n.props {
		if p.required || rapid.Bool().Draw(t, label+"."+p.name+".given") {
			out[p.name] = drawValid(t, p.node, unknown, label+"."+p.name)
		}
	}
	if unknown && rapid.Bool().Draw(t, label+".unknown") {
		out["zz_unknown"] = rapid.String().Draw(t, label+".unknownValue")
	}
	return out
}

// wrongValues holds one value of each JSON kind, with the types that accept it.
var wrongValues = []struct {
	v       any
	fitsFor []string
}{
	{nil, []string{"null"}},
	{true, []string{"boolean"}},
	{"5", []string{"string"}},
	{json.Number("7"), []string{"integer", "number"}},
	{json.Number("1.5"), []string{"number"}},
	{[]any{}, []string{"array"}},
	{map[string]any{}, []string{"object"}},
}

// drawWrong draws a value of a type the node does not accept.
func drawWrong(t *rapid.T, n *genSchema, label string) any {
	var vals []any
	for _, w := range wrongValues {
		fits := slices.Contains(w.fitsFor, n.typ) || (n.nullable && w.v == nil)
		if !fits {
			vals = append(vals, w.v)
		}
	}
	return rapid.SampledFrom(vals).Draw(t, label)
}

// plantWrong replaces one value somewhere inside val (an object or array of
// schema n) with a value of the wrong type, and returns where.
func plantWrong(t *rapid.T, n *genSchema, val any, p argPath) argPath {
	switch x := val.(type) {
	case map[string]any:
		var present []genProp
		for _, pr := range n.props {
			if _, ok := x[pr.name]; ok {
				present = append(present, pr)
			}
		}
		if len(present) == 0 {
			return nil
		}
		pr := rapid.SampledFrom(present).Draw(t, "at "+p.String())
		if rapid.Bool().Draw(t, "descend "+p.key(pr.name).String()) {
			if at := plantWrong(t, pr.node, x[pr.name], p.key(pr.name)); at != nil {
				return at
			}
		}
		x[pr.name] = drawWrong(t, pr.node, "wrong "+p.key(pr.name).String())
		return p.key(pr.name)
	case []any:
		if len(x) == 0 {
			return nil
		}
		i := rapid.IntRange(0, len(x)-1).Draw(t, "index "+p.String())
		if rapid.Bool().Draw(t, "descend "+p.index(i).String()) {
			if at := plantWrong(t, n.items, x[i], p.index(i)); at != nil {
				return at
			}
		}
		x[i] = drawWrong(t, n.items, "wrong "+p.index(i).String())
		return p.index(i)
	}
	return nil
}

// drawTool draws a tool whose schema is an object with at least one property.
func drawTool(t *rapid.T) (Tool, *genSchema) {
	root := &genSchema{typ: "object", props: drawProps(t, rapid.IntRange(0, 3).Draw(t, "depth"), "root", 1)}
	raw, err := json.Marshal(root.jsonSchema())
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	if err := checkSchema(raw); err != nil {
		t.Fatalf("checkSchema(%s): %v", raw, err)
	}
	return Tool{Name: "gen", Parameters: raw}, root
}

// viaJSON sends args through JSON text, as a model's arguments arrive.
func viaJSON(t *rapid.T, args any) map[string]any {
	raw, err := Canonical(args)
	if err != nil {
		t.Fatalf("encode %v: %v", args, err)
	}
	out, err := decodeArgs(string(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return out
}

func TestSchemaPropWrongTypeNeverAccepted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tool, root := drawTool(t)
		val := drawValid(t, root, false, "args").(map[string]any)
		if len(val) == 0 { // make sure there is somewhere to plant
			p := root.props[0]
			val[p.name] = drawValid(t, p.node, false, "args."+p.name)
		}
		at := plantWrong(t, root, val, nil)
		if at == nil {
			t.Fatalf("nowhere to plant a wrong value in %v", val)
		}
		args := viaJSON(t, val)
		for _, reject := range []bool{false, true} {
			out, err := validateArgs(tool, args, reject)
			if err == nil {
				t.Fatalf("schema %s accepted %v (wrong type at %s) as %v", tool.Parameters, args, at, out)
			}
			if want := fmt.Sprintf("argument %q: expected ", at.String()); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
		}
	})
}

func TestSchemaPropValidAccepted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tool, root := drawTool(t)
		reject := rapid.Bool().Draw(t, "reject")
		args := viaJSON(t, drawValid(t, root, !reject, "args"))
		if _, err := validateArgs(tool, args, reject); err != nil {
			t.Fatalf("schema %s refused %v: %v", tool.Parameters, args, err)
		}
	})
}

func TestSchemaPropIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tool, root := drawTool(t)
		args := viaJSON(t, drawValid(t, root, true, "args"))
		once, err := validateArgs(tool, args, false)
		if err != nil {
			t.Fatalf("schema %s refused %v: %v", tool.Parameters, args, err)
		}
		onceJSON, _ := Canonical(once)
		for _, reject := range []bool{false, true} { // nothing unknown is left
			twice, err := validateArgs(tool, viaJSON(t, once), reject)
			if err != nil {
				t.Fatalf("normalized %s refused (reject=%v): %v", onceJSON, reject, err)
			}
			if twiceJSON, _ := Canonical(twice); string(twiceJSON) != string(onceJSON) {
				t.Fatalf("not idempotent:\n once  %s\n twice %s", onceJSON, twiceJSON)
			}
		}
		for _, p := range root.props { // defaults are in
			if _, ok := once[p.name]; !ok && p.def != nil {
				t.Fatalf("default of %q not injected into %s", p.name, onceJSON)
			}
		}
	})
}
