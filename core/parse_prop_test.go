package core

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/stepwise-agent/stepwise/core/helpers"
)

// parseCase is one table row for a parser: the reply, and either the text
// and calls it must give (Arguments compared byte for byte) or a fragment of
// the error, optionally with its line and column.
type parseCase struct {
	name      string
	in        string
	text      string
	calls     []NativeCall
	err       string
	line, col int
}

func runParseCases(t *testing.T, f Format, tools []Tool, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(f, ModelReply{Text: tc.in}, tools)
			if tc.err != "" {
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, ErrParse) {
					t.Fatalf("want a ParseError containing %q, got %v (parsed %+v)", tc.err, err, got)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q does not contain %q", err, tc.err)
				}
				if tc.line != 0 && (pe.Line != tc.line || pe.Col != tc.col) {
					t.Fatalf("error at line %d col %d, want line %d col %d: %v", pe.Line, pe.Col, tc.line, tc.col, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got.Text != tc.text {
				t.Errorf("text = %q, want %q", got.Text, tc.text)
			}
			if len(got.Calls) != len(tc.calls) {
				t.Fatalf("calls = %+v, want %+v", got.Calls, tc.calls)
			}
			for i := range tc.calls {
				if got.Calls[i] != tc.calls[i] {
					t.Errorf("call %d = %+v, want %+v", i, got.Calls[i], tc.calls[i])
				}
			}
		})
	}
}

// canonicalArgs decodes call arguments for comparison (key order and number
// spelling do not matter).
func canonicalArgs(t interface{ Fatalf(string, ...any) }, s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("arguments %q are not JSON: %v", s, err)
	}
	return v
}

// genJSONValue generates JSON values: nested objects and arrays, Unicode
// strings (with quotes, backslashes, newlines and every format's closing
// markers), ints, floats, bools and null.
func genJSONValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 6
		if depth > 0 {
			kinds = 8
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return genArgString().Draw(t, "string")
		case 1:
			return rapid.Int64Range(-1<<53, 1<<53).Draw(t, "int")
		case 2:
			return rapid.Float64Range(-1e12, 1e12).Draw(t, "float")
		case 3:
			return rapid.SampledFrom([]float64{0.5, -2.25, 1e-7, 3e100, 1.5e-300}).Draw(t, "float-edge")
		case 4:
			return rapid.Bool().Draw(t, "bool")
		case 5:
			return nil
		case 6:
			return rapid.SliceOfN(genJSONValue(depth-1), 0, 4).Draw(t, "array")
		default:
			return rapid.MapOfN(genArgString(), genJSONValue(depth-1), 0, 4).Draw(t, "object")
		}
	})
}

func genArgString() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.StringOfN(rapid.SampledFrom([]rune("aé東🎉\"'\\\n\t{}[]<>/`#;=,():x0_ -")), 0, 16, -1),
		rapid.SampledFrom([]string{"</tool>", "</helpers>", "```", "\n```\n", `"""`, "'''", `\u00e9`, "#", "<tool name=\"x\">", "{\"tool\": 1}"}),
	)
}

// genCall generates a call: a name that is a dotted Python identifier (so
// every format can write it), an id, and arguments.
func genCall(t *rapid.T) NativeCall {
	name := rapid.StringMatching(`[a-z_][a-z0-9_]{0,10}(\.[a-z_][a-z0-9_]{0,6})?`).Filter(func(s string) bool {
		for _, part := range strings.Split(s, ".") {
			if helpers.IsKeyword(part) {
				return false
			}
		}
		return true
	}).Draw(t, "name")
	id := rapid.StringMatching(`([A-Za-z0-9_-]{1,12})?`).Draw(t, "id")
	keys := rapid.OneOf(rapid.StringMatching(`[a-z_][a-z0-9_]{0,8}`), genArgString())
	args := rapid.MapOfN(keys, genJSONValue(2), 0, 5).Draw(t, "args")
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return NativeCall{ID: id, Name: name, Arguments: strings.TrimSpace(b.String())}
}

// schemaFor is an object schema listing the argument names of c.
func schemaFor(c NativeCall) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i, m := range jsonMembers(c.Arguments) {
		if i > 0 {
			b.WriteByte(',')
		}
		appendJSONString(&b, m.key)
		b.WriteString(":{}")
	}
	b.WriteString("}}")
	return json.RawMessage(b.String())
}

// TestPropRenderCallParsesBack: any call written with RenderCall in a text
// format parses back to the same call (the id too, where the format has one).
func TestPropRenderCallParsesBack(t *testing.T) {
	withID := map[Format]bool{FormatXML: true, FormatJSON: true, FormatFenced: true, FormatAuto: true}
	rapid.Check(t, func(t *rapid.T) {
		c := genCall(t)
		tools := []Tool{{Name: c.Name, Parameters: schemaFor(c)}}
		for _, f := range []Format{FormatXML, FormatJSON, FormatFenced, FormatStrict, FormatHelpers, FormatAuto} {
			text := RenderCall(f, c)
			got, err := Parse(f, ModelReply{Text: text}, tools)
			if err != nil {
				t.Fatalf("%s: %v\nrendered:\n%s", f, err, text)
			}
			if len(got.Calls) != 1 || got.Text != "" {
				t.Fatalf("%s: parsed %+v\nrendered:\n%s", f, got, text)
			}
			g := got.Calls[0]
			if g.Name != c.Name {
				t.Fatalf("%s: name %q, want %q", f, g.Name, c.Name)
			}
			if withID[f] && g.ID != c.ID {
				t.Fatalf("%s: id %q, want %q", f, g.ID, c.ID)
			}
			if a, b := canonicalArgs(t, g.Arguments), canonicalArgs(t, c.Arguments); !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: arguments %s, want %s\nrendered:\n%s", f, g.Arguments, c.Arguments, text)
			}
		}
	})
}

// TestPropHelpersPositionalParsesBack: the same call written with positional
// arguments (in schema order, for the identifier-named ones) parses back to
// the same arguments.
func TestPropHelpersPositionalParsesBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCall(t)
		tools := []Tool{{Name: c.Name, Parameters: schemaFor(c)}}
		members := jsonMembers(c.Arguments)
		npos := rapid.IntRange(0, len(members)).Draw(t, "positional")
		var parts []string
		var rest []jsonMember
		for i, m := range members {
			if i < npos {
				parts = append(parts, pyLiteral(m.raw))
			} else {
				rest = append(rest, m)
			}
		}
		if len(rest) > 0 {
			var b strings.Builder
			b.WriteString("**")
			writePyDict(&b, rest)
			parts = append(parts, b.String())
		}
		text := "<helpers>\n" + c.Name + "(\n    " + strings.Join(parts, ",\n    ") + "\n)\n</helpers>"
		got, err := Parse(FormatHelpers, ModelReply{Text: text}, tools)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if len(got.Calls) != 1 {
			t.Fatalf("parsed %+v", got)
		}
		if a, b := canonicalArgs(t, got.Calls[0].Arguments), canonicalArgs(t, c.Arguments); !reflect.DeepEqual(a, b) {
			t.Fatalf("arguments %s, want %s\n%s", got.Calls[0].Arguments, c.Arguments, text)
		}
	})
}

// parseFragments are pieces of every format, to build replies that reach
// deep into the parsers.
var parseFragments = []string{
	"<tool", "<tool name=\"s\"", " tag='a'", ">", "</tool>", "/>", "{", "}", "[", "]", "\"", "'", ":", ",",
	"\"tool\"", "\"args\"", "\"parameters\"", "\"message\"", "\"tools\"", "\"tag\"", "```", "```tool\n", "```json\n", "\n",
	"<helpers>", "</helpers>", "find_user(", ")", "name=", "\"Sarah\"", "'''", "\"\"\"", "\\", "\\u00e9", "\\U0001F600",
	"\\ud83d", "1", "-2.5e3", "0x1F", "1_000", "True", "None", "x", "+", ".", ";", "#", "**", "*", "é", "🎉", "\xff", " ",
}

func genReply() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.Custom(func(t *rapid.T) string {
			return strings.Join(rapid.SliceOfN(rapid.SampledFrom(parseFragments), 0, 40).Draw(t, "fragments"), "")
		}),
	)
}

var propTools = []Tool{
	{Name: "find_user", Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"zip":{"type":"string","default":"10001"}},"required":["name"]}`)},
	{Name: "s", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{}}}`)},
}

// TestPropParseNeverPanics: every format reads any string without panicking,
// and either fails with a located ParseError or gives calls whose arguments
// are JSON objects.
func TestPropParseNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := genReply().Draw(t, "reply")
		for _, f := range []Format{FormatXML, FormatJSON, FormatFenced, FormatStrict, FormatHelpers, FormatAuto} {
			checkParseOutcome(t, f, text)
		}
	})
}

// checkParseOutcome parses text in format f and checks the outcome's shape.
func checkParseOutcome(t interface {
	Fatalf(string, ...any)
}, f Format, text string) {
	got, err := Parse(f, ModelReply{Text: text}, propTools)
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrParse) {
			t.Fatalf("%s: error %v is not a ParseError", f, err)
		}
		if pe.Offset < 0 || pe.Offset > len(text) || pe.Line < 1 || pe.Col < 1 || pe.Msg == "" {
			t.Fatalf("%s: badly located error %+v", f, pe)
		}
		return
	}
	for _, c := range got.Calls {
		var obj map[string]any
		if !strings.HasPrefix(c.Arguments, "{") || json.Unmarshal([]byte(c.Arguments), &obj) != nil {
			t.Fatalf("%s: arguments %q of %q are not a JSON object (reply %q)", f, c.Arguments, c.Name, text)
		}
		if c.Name == "" {
			t.Fatalf("%s: call without a name (reply %q)", f, text)
		}
	}
}
