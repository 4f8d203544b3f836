package schema

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// libraryJSON is Canonical as encoding/json writes it.
func libraryJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// genJSONText draws strings heavy in what JSON escapes: quotes, backslashes,
// control characters, HTML characters (not escaped here), U+2028/U+2029,
// invalid UTF-8, and ordinary text.
func genJSONText() *rapid.Generator[string] {
	pieces := []string{`"`, `\`, "\x00", "\x01", "\x1f", "\b", "\f", "\n", "\r", "\t", "\x7f", "<", ">", "&",
		"\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "é", "日本", "😀", "\ufffd", "a", "key", " "}
	return rapid.Custom(func(t *rapid.T) string {
		var b []byte
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 12).Draw(t, "pieces") {
			b = append(b, p...)
		}
		if rapid.Bool().Draw(t, "random") {
			b = append(b, rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "bytes")...)
		}
		return string(b)
	})
}

func genCanonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 5
		if depth > 0 {
			kinds = 7
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return genJSONText().Draw(t, "string")
		case 3:
			return json.Number(rapid.SampledFrom([]string{"0", "-0", "1", "-12", "3.25", "1e10", "-2.5E-3", "123456789012345678901234567890", "01", "1.", "+1", "0x10", ""}).Draw(t, "number"))
		case 4:
			return rapid.Float64().Draw(t, "float") // not ours: encoding/json writes it
		case 5:
			if rapid.IntRange(0, 9).Draw(t, "nil") == 0 {
				return []any(nil)
			}
			return rapid.SliceOfN(genCanonValue(depth-1), 0, 4).Draw(t, "array")
		default:
			if rapid.IntRange(0, 9).Draw(t, "nil") == 0 {
				return map[string]any(nil)
			}
			return rapid.MapOfN(genJSONText(), genCanonValue(depth-1), 0, 4).Draw(t, "object")
		}
	})
}

// Canonical gives encoding/json's bytes, or its error, for every value.
func TestCanonicalJSONMatchesLibrary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genCanonValue(3).Draw(t, "v")
		got, err := Canonical(v)
		want, wantErr := libraryJSON(v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, encoding/json %v", err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// The fast path takes the values call arguments decode to.
func TestCanonicalJSONWritesArguments(t *testing.T) {
	args, err := decodeArgs(`{"b":[1,2.5,"x\u2028<y>",null,true],"a":{"z":"\"q\"","é":-0.0}}`)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendCanonical(nil, args)
	if want := `{"a":{"z":"\"q\"","é":-0.0},"b":[1,2.5,"x\u2028<y>",null,true]}`; !ok || string(got) != want {
		t.Fatalf("%s, %v; want %s", got, ok, want)
	}
}
