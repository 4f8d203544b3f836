package codec

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

// TestMessageCodec: canonical message encodings take the fast path and
// decode to exactly what the general decoder gives.
func TestMessageCodec(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		msgs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) core.Message { return genMessage(t, "m") }), 0, 5).Draw(t, "msgs")
		body, last := EncodeMessages(nil, msgs)
		var ends []int
		got, err := DecodeMessages(body, len(msgs), false, nil, &ends)
		if err != nil {
			t.Fatal(err)
		}
		start := 0
		for i, end := range ends {
			d := msgDecoder{b: body[start:end], s: string(body[start:end])}
			var fast core.Message
			if !d.message(&fast) || d.off != end-start {
				t.Fatalf("message %d did not take the fast path", i)
			}
			var slow core.Message
			if err := msgDec.Unmarshal(body[start:end], &slow); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(got[i], slow) {
				t.Fatalf("message %d: fast %#v, general %#v", i, fast, slow)
			}
			start = end
		}
		if len(msgs) > 0 {
			b, _ := msgEnc.Marshal(msgs[len(msgs)-1])
			if MessageSum(b) != last {
				t.Fatal("last message checksum")
			}
		}
		if again, _ := EncodeMessages(nil, got); !bytes.Equal(again, body) {
			t.Fatal("re-encoding differs")
		}
	})
}

// FuzzMessageDecoder: whatever the fast path accepts, the general decoder
// accepts too, with the same length and value.
func FuzzMessageDecoder(f *testing.F) {
	for _, m := range []core.Message{
		{},
		{Role: core.RoleUser, Content: "hi"},
		{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "a", Name: "b", Args: []byte(`{}`)}}},
		{Role: core.RoleTool, CallID: "a", Name: "b", Content: string(make([]byte, 300))},
	} {
		b, _ := msgEnc.Marshal(m)
		f.Add(b)
	}
	f.Add([]byte{0xa1, 0x01, 0x80})
	f.Add([]byte{0xa1, 0x03, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := msgDecoder{b: b, s: string(b)}
		var fast core.Message
		if !d.message(&fast) {
			return
		}
		var slow core.Message
		rest, err := msgDec.UnmarshalFirst(b, &slow)
		if err != nil {
			t.Fatalf("fast path accepted %x, the general decoder says %v", b, err)
		}
		if len(b)-len(rest) != d.off {
			t.Fatalf("fast path read %d bytes, general %d", d.off, len(b)-len(rest))
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %#v, general %#v", fast, slow)
		}
	})
}

func TestDecodeMessagesRejects(t *testing.T) {
	good, _ := EncodeMessages(nil, []core.Message{{Role: core.RoleUser, Content: "hi"}})
	for name, c := range map[string]struct {
		body []byte
		n    int
	}{
		"trailing":      {append(append([]byte{}, good...), 0x00), 1},
		"short":         {good[:len(good)-1], 1},
		"too few":       {good, 2},
		"bad utf8":      {[]byte{0xa1, 0x02, 0x61, 0xff}, 1},
		"unknown field": {[]byte{0xa1, 0x09, 0x61, 0x61}, 1},
		"not a map":     {[]byte{0x01}, 1},
		"all, cut":      {good[:len(good)-1], -1},
	} {
		if _, err := DecodeMessages(c.body, c.n, false, nil, nil); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestCheckCBOR: the write-time guard accepts what core encodes and refuses
// what core's strict decoder would.
func TestCheckCBOR(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		st := state(rapid.SliceOfN(rapid.Custom(func(t *rapid.T) core.Message { return genMessage(t, "m") }), 0, 4).Draw(t, "msgs")...)
		st.Request.Input = genText(t, "input")
		st.Counters.Steps = rapid.IntRange(0, 1000).Draw(t, "steps")
		if rapid.Bool().Draw(t, "pending") {
			st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
		}
		b, err := core.EncodeState(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckCBOR(b); err != nil {
			t.Fatalf("refused %x: %v", b, err)
		}
		if cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut"); CheckCBOR(b[:cut]) == nil {
			t.Fatalf("accepted a truncated item")
		}
	})
	for name, b := range map[string][]byte{
		"bad utf8":   {0x61, 0xff},
		"trailing":   {0x01, 0x01},
		"indefinite": {0x9f, 0xff},
		"reserved":   {0x1c},
		"short map":  {0xa2, 0x01, 0x01},
		"huge array": {0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"empty":      {},
	} {
		if CheckCBOR(b) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzCheckCBOR: what the guard accepts, the library finds well-formed too.
func FuzzCheckCBOR(f *testing.F) {
	f.Add([]byte{0xa1, 0x01, 0x61, 0x61})
	f.Fuzz(func(t *testing.T, b []byte) {
		if CheckCBOR(b) == nil {
			if err := msgDec.Wellformed(b); err != nil {
				t.Fatalf("CheckCBOR accepted %x, the library says %v", b, err)
			}
		}
	})
}
