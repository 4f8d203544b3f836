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

// TestCompiledSchemasAreReused: a compiled config hands out the schemas
// compiled once; a plain one compiles anew on every use (there is no
// cache), and so does a compiled one whose tool changed afterwards.
func TestCompiledSchemasAreReused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tools = []Tool{{Name: "t", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
	a, _ := cfg.argSchema(cfg.Tools[0])
	b, _ := cfg.argSchema(cfg.Tools[0])
	if a == nil || a == b {
		t.Fatal("a plain config shares a compiled schema between calls")
	}
	compiled, err := Compile(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ = compiled.argSchema(compiled.Tools[0])
	b, _ = compiled.argSchema(compiled.Tools[0])
	if a == nil || a != b || a != compiled.compiled.schemas["t"].schema {
		t.Fatal("a compiled config compiles its schema again")
	}
	changed := compiled
	changed.Tools = []Tool{{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}}
	if c, _ := changed.argSchema(changed.Tools[0]); c == a {
		t.Fatal("a changed tool gets the schema compiled before the change")
	}
	if spec, ok := compiled.formatSpec(); !ok || !spec.nativeTools {
		t.Fatal("the compiled format is not native")
	}
}
