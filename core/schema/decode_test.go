package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genArgsText draws argument texts: JSON objects written by encoding/json
// (with and without HTML escapes, compact or indented with any whitespace),
// and the same with a few bytes changed, inserted or removed.
type argsText struct {
	text   string
	edited bool
}

func genArgsText() *rapid.Generator[argsText] {
	return rapid.Custom(func(t *rapid.T) argsText {
		obj := rapid.MapOfN(genJSONText(), genCanonValue(3), 0, 5).Draw(t, "object")
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(rapid.Bool().Draw(t, "escapeHTML"))
		ws := rapid.StringOfN(rapid.SampledFrom([]rune{' ', '\t', '\n', '\r'}), 0, 3, -1)
		if rapid.Bool().Draw(t, "indent") {
			enc.SetIndent(ws.Draw(t, "prefix"), ws.Draw(t, "indent"))
		}
		if err := enc.Encode(obj); err != nil {
			return argsText{text: "{}"} // a float or number encoding/json will not write
		}
		text := ws.Draw(t, "before") + b.String() + ws.Draw(t, "after")
		edits := rapid.IntRange(0, 2).Draw(t, "edits")
		for range edits {
			if text == "" {
				break
			}
			at := rapid.IntRange(0, len(text)-1).Draw(t, "at")
			c := string([]byte{rapid.SampledFrom([]byte(`{}[]",:\/ u0-9eE.+tfnbr`+"\x00\x80\xff")).Draw(t, "byte")})
			switch rapid.IntRange(0, 2).Draw(t, "edit") {
			case 0:
				text = text[:at] + c + text[at+1:]
			case 1:
				text = text[:at] + c + text[at:]
			default:
				text = text[:at] + text[at+1:]
			}
		}
		return argsText{text, edits > 0}
	})
}

// Whatever the fast decoder takes, encoding/json takes too and decodes to the
// same value; and it takes every object encoding/json writes from ordinary
// values.
func TestDecodeObjectFastMatchesLibrary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genArgsText().Draw(t, "text")
		got, ok := decodeObjectFast(in.text)
		want, err := decodeArgsLibrary(in.text)
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("fast decoded %q to %#v; encoding/json: %#v, %v", in.text, got, want, err)
		}
		// encoding/json writes the invalid UTF-8 of a key as U+FFFD, so
		// two keys of a map can come out the same: refused as duplicates,
		// rightly left to encoding/json.
		if !ok && !in.edited && !hasDuplicateKey(in.text) {
			t.Fatalf("the fast path left %q, as encoding/json wrote it, to encoding/json", in.text)
		}
	})
}

// hasDuplicateKey reports whether an object of the JSON text has a key
// twice.
func hasDuplicateKey(text string) bool {
	dec := json.NewDecoder(strings.NewReader(text))
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next string is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top >= 0 && stack[top].object {
					stack[top].key = true
				}
				stack = append(stack, frame{keys: map[string]bool{}, object: v == '{', key: v == '{'})
			default:
				stack = stack[:top]
			}
			continue
		case string:
			if top >= 0 && stack[top].object && stack[top].key {
				if stack[top].keys[v] {
					return true
				}
				stack[top].keys[v] = true
				stack[top].key = false
				continue
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].key = true
		}
	}
}

func TestDecodeObjectFastTakesTheCommonCase(t *testing.T) {
	for _, text := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"q":"weather in Paris","n":-2.5e3,"deep":{"l":[true,false,null,[],{}]}}`,
		"{\n  \"code\": \"print(\\\"hi\\\")\\n\\tx = 1\",\n  \"u\": \"\\u00e9\\u003c\"\n}\n",
		`{"p":"a\/b\\c\"d\b\f\r"}`,
	} {
		got, ok := decodeObjectFast(text)
		want, err := decodeArgsLibrary(text)
		if !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: fast %#v, %v; encoding/json %#v, %v", text, got, ok, want, err)
		}
	}
	// Left to encoding/json: surrogates, invalid UTF-8, trailing data, a key
	// given twice (refused by name there), and anything malformed, with its
	// error text.
	for _, text := range []string{
		`{"e":"\ud83d\ude00"}`, "{\"a\":\"\xff\"}", `{} {}`, `{"a":1,"a":2}`, `{"o":{"a":1,"a":2}}`, `{}}`, `[1]`, `{"a":01}`, `{"a":1,}`, `{"a" 1}`, `{"a":tru}`,
		`{"a":"` + "\x01" + `"}`, strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100),
	} {
		if got, ok := decodeObjectFast(text); ok {
			t.Errorf("%q: the fast path took it: %#v", text, got)
		}
	}
}

// FuzzDecodeArgs: decoding arguments never panics, and what it accepts has
// no key twice in any object.
func FuzzDecodeArgs(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":[1,{"d":2}]}}`)
	f.Add(`{"a":1,"a":2}`)
	f.Add(`{"o":{"k":1, "k" :2}}`)
	f.Fuzz(func(t *testing.T, text string) {
		if _, err := DecodeArgs(text); err == nil {
			if p, dup := repeatedKey(text); dup {
				t.Fatalf("%q accepted with %s twice", text, p)
			}
		}
	})
}
