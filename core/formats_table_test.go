package core

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestBuiltinFormatsTable: every built-in format is in the one table, in
// documentation order, with the functions every format must have, and
// what its RenderCall writes its parser reads back as that call (the id
// too where the format has one; native calls travel beside the text).
func TestBuiltinFormatsTable(t *testing.T) {
	want := []Format{FormatNative, FormatXML, FormatJSON, FormatFenced, FormatStrict, FormatHelpers, FormatAuto}
	if got := (*Formats)(nil).Names(); !slices.Equal(got, want) {
		t.Fatalf("the built-in table lists %v, want %v", got, want)
	}
	withID := map[Format]bool{FormatNative: true, FormatXML: true, FormatJSON: true, FormatFenced: true, FormatAuto: true}
	for _, b := range builtinFormats {
		if b.spec.Parse == nil || b.spec.RenderCall == nil || b.spec.Docs == nil || b.spec.parseReply == nil {
			t.Errorf("%s: the table entry lacks a function", b.name)
		}
		t.Run(string(b.name), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				c := genCall(t)
				tools := []Tool{{Name: c.Name, Parameters: schemaFor(c)}}
				text := b.spec.RenderCall(c)
				reply := ModelReply{Text: text}
				if b.name == FormatNative {
					var obj struct{ ID, Name, Arguments string }
					if err := json.Unmarshal([]byte(text), &obj); err != nil || (NativeCall{ID: obj.ID, Name: obj.Name, Arguments: obj.Arguments}) != c {
						t.Fatalf("the native object %s is not the call %+v: %v", text, c, err)
					}
					reply = ModelReply{Calls: []NativeCall{c}}
				}
				got, err := b.spec.parse(b.name, reply, tools)
				if err != nil || len(got.Calls) != 1 || got.Text != "" {
					t.Fatalf("parsed %+v, %v\nrendered:\n%s", got, err, text)
				}
				g := got.Calls[0]
				if g.Name != c.Name || (withID[b.name] && g.ID != c.ID) {
					t.Fatalf("parsed %q (id %q), want %q (id %q)", g.Name, g.ID, c.Name, c.ID)
				}
				if a, w := canonicalArgs(t, g.Arguments), canonicalArgs(t, c.Arguments); !reflect.DeepEqual(a, w) {
					t.Fatalf("arguments %s, want %s\nrendered:\n%s", g.Arguments, c.Arguments, text)
				}
				// The exported Parse reads the reply's text as parseReply does.
				if b.name != FormatNative {
					viaText, err := b.spec.Parse(text, tools)
					if err != nil || !reflect.DeepEqual(viaText, got) {
						t.Fatalf("Parse gives %+v, %v; the reply parser %+v", viaText, err, got)
					}
				}
			})
		})
	}
}
