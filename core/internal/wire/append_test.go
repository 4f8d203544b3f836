package wire

import (
	"bytes"
	"math"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"pgregory.net/rapid"
)

// sameAsLibrary checks that fast appends v's bytes after a prefix, and that
// they are the bytes the library's mode gives for v.
func sameAsLibrary(t *rapid.T, v any, fast func([]byte) []byte) {
	want, err := EncMode().Marshal(v)
	if err != nil {
		t.Fatalf("library: %v", err)
	}
	prefix := []byte{0xAA}
	got := fast(prefix)
	if !bytes.Equal(got[:1], prefix) || !bytes.Equal(got[1:], want) {
		t.Fatalf("%#v:\n got % x\nwant % x", v, got[1:], want)
	}
}

// genInt draws integers near every head boundary, and any others.
func genInt() *rapid.Generator[int64] {
	return rapid.OneOf(
		rapid.Int64(),
		rapid.Int64Range(-300, 300),
		rapid.SampledFrom([]int64{23, 24, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, -24, -25, -256, -257, math.MinInt64, math.MaxInt64}),
	)
}

func TestPrimitivesMatchLibrary(t *testing.T) {
	t.Run("int", rapid.MakeCheck(func(t *rapid.T) {
		i := genInt().Draw(t, "i")
		sameAsLibrary(t, i, func(dst []byte) []byte { return AppendInt64(dst, i) })
		if i >= math.MinInt && i <= math.MaxInt {
			sameAsLibrary(t, int(i), func(dst []byte) []byte { return AppendInt(dst, int(i)) })
		}
	}))
	t.Run("text", rapid.MakeCheck(func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringN(20, 300, 70000)).Draw(t, "s")
		sameAsLibrary(t, s, func(dst []byte) []byte { return AppendText(dst, s) })
	}))
	t.Run("bytes", rapid.MakeCheck(func(t *rapid.T) {
		var b []byte
		if rapid.Bool().Draw(t, "non-nil") {
			b = rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "b")
		}
		sameAsLibrary(t, b, func(dst []byte) []byte { return AppendBytes(dst, b) })
	}))
	t.Run("bool", rapid.MakeCheck(func(t *rapid.T) {
		v := rapid.Bool().Draw(t, "v")
		sameAsLibrary(t, v, func(dst []byte) []byte { return AppendBool(dst, v) })
	}))
	t.Run("strings", rapid.MakeCheck(func(t *rapid.T) {
		var list []string
		if rapid.Bool().Draw(t, "non-nil") {
			list = rapid.SliceOfN(rapid.String(), 0, 30).Draw(t, "list")
		}
		sameAsLibrary(t, list, func(dst []byte) []byte { return AppendStrings(dst, list) })
		sameAsLibrary(t, list, func(dst []byte) []byte {
			return AppendList(dst, list, func(dst []byte, s *string) []byte { return AppendText(dst, *s) })
		})
	}))
	t.Run("fields", rapid.MakeCheck(func(t *rapid.T) {
		type rec struct {
			A int64  `cbor:"1,keyasint,omitempty"`
			B string `cbor:"2,keyasint,omitempty"`
			C bool   `cbor:"5,keyasint,omitempty"`
			D string `cbor:"name,omitempty"`
		}
		v := rec{A: genInt().Draw(t, "a"), B: rapid.String().Draw(t, "b"), C: rapid.Bool().Draw(t, "c"), D: rapid.String().Draw(t, "d")}
		sameAsLibrary(t, v, func(dst []byte) []byte {
			var f Fields
			dst = f.Open(dst)
			if v.A != 0 {
				dst = AppendInt64(f.Key(dst, 1), v.A)
			}
			if v.B != "" {
				dst = AppendText(f.Key(dst, 2), v.B)
			}
			if v.C {
				dst = AppendBool(f.Key(dst, 5), v.C)
			}
			if v.D != "" {
				dst = AppendText(f.Name(dst, "name"), v.D)
			}
			return f.Close(dst)
		})
	}))
	t.Run("envelope", rapid.MakeCheck(func(t *rapid.T) {
		kind := rapid.StringN(0, 40, -1).Draw(t, "kind")
		n := genInt().Draw(t, "body")
		body, _ := EncMode().Marshal(n)
		sameAsLibrary(t, Envelope{Kind: kind, Body: body}, func(dst []byte) []byte {
			return AppendInt64(AppendEnvelope(dst, kind), n)
		})
		sameAsLibrary(t, Envelope{Kind: kind, Body: body}, func(dst []byte) []byte {
			out, err := AppendEnveloped(dst, kind, body)
			if err != nil {
				t.Fatal(err)
			}
			return out
		})
	}))
}

// TestSizesAreUpperBounds: a size estimate is never below what the
// matching Append writes (with a one-byte key in front, as a field).
func TestSizesAreUpperBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringN(200, 70000, 70000)).Draw(t, "s")
		if got := 1 + len(AppendText(nil, s)); got > TextSize(s) {
			t.Fatalf("TextSize(%d bytes) = %d, written %d", len(s), TextSize(s), got)
		}
		list := rapid.SliceOfN(rapid.String(), 0, 30).Draw(t, "list")
		if got := 1 + len(AppendStrings(nil, list)); got > StringsSize(list) {
			t.Fatalf("StringsSize = %d, written %d", StringsSize(list), got)
		}
		i := genInt().Draw(t, "i")
		if got := 1 + len(AppendInt64(nil, i)); got > IntField {
			t.Fatalf("IntField = %d, written %d", IntField, got)
		}
		if got := len(AppendEnvelope(nil, s)) + 1; got > EnvelopeSize(s, 0) {
			t.Fatalf("EnvelopeSize = %d, written %d", EnvelopeSize(s, 0), got)
		}
	})
}

// TestGrowKeepsContents: Grow keeps what dst holds and makes room for n.
func TestGrowKeepsContents(t *testing.T) {
	dst := []byte{1, 2, 3}
	out := Grow(dst, 100)
	if !bytes.Equal(out, dst) || cap(out)-len(out) < 100 {
		t.Fatalf("Grow = %v (cap %d)", out, cap(out))
	}
	if roomy := make([]byte, 1, 10); &Grow(roomy, 5)[:1][0] != &roomy[0] {
		t.Fatal("Grow copied a slice that had room")
	}
}

// TestDecModeIsStrict: the strict mode refuses a repeated key and a field
// the type does not know; the lenient one ignores the unknown field.
func TestDecModeIsStrict(t *testing.T) {
	type v1 struct {
		A int `cbor:"1,keyasint"`
	}
	dup := []byte{0xa2, 0x01, 0x01, 0x01, 0x02}     // {1: 1, 1: 2}
	unknown := []byte{0xa2, 0x01, 0x01, 0x02, 0x02} // {1: 1, 2: 2}
	var v v1
	if err := DecMode().Unmarshal(dup, &v); err == nil {
		t.Error("a repeated key was accepted")
	}
	if err := DecMode().Unmarshal(unknown, &v); err == nil {
		t.Error("an unknown field was accepted")
	}
	if err := LenientDecMode().Unmarshal(unknown, &v); err != nil || v.A != 1 {
		t.Errorf("lenient: %v, %+v", err, v)
	}
	var raw cbor.RawMessage
	if err := DecMode().Unmarshal([]byte{0x9f, 0xff}, &raw); err == nil {
		t.Error("an indefinite length was accepted")
	}
}
