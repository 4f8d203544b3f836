package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"pgregory.net/rapid"
)

func state(msgs ...core.Message) core.State {
	return core.State{Version: core.StateVersion, Phase: core.PhaseModel, Messages: msgs}
}

// TestRowRoundTrip: a built row opens to the parts it was built from,
// compressed or not, and its record re-attaches a tool list stored by
// reference, byte for byte.
func TestRowRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		msgs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) core.Message { return genMessage(t, "m") }), 1, 6).Draw(t, "msgs")
		before := rapid.IntRange(0, len(msgs)-1).Draw(t, "before")
		var tail Tail
		if before > 0 {
			enc, sum := EncodeMessages(nil, msgs[:before])
			_ = enc
			tail = Tail{Seq: 3, MsgCount: before, MsgSum: sum}
		} else {
			tail = Tail{Seq: 3}
		}
		st := state(msgs...)
		st.Pending = &core.Pending{Kind: core.PendingModel, Role: core.Primary}
		var tools []core.Tool
		for i, n := 0, rapid.IntRange(0, 3).Draw(t, "tools"); i < n; i++ {
			tools = append(tools, core.Tool{Name: rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "name"), Description: strings.Repeat("d", rapid.IntRange(0, 300).Draw(t, "desc")),
				Parameters: json.RawMessage(`{"type":"object"}`)})
		}
		a := core.RequestModelCall{Role: core.Primary, Messages: st.Messages, Tools: tools, State: st}
		var res core.Result
		if rapid.Bool().Draw(t, "result") {
			res = core.ToolResults{Results: []core.ToolResult{{CallID: "c", Output: strings.Repeat("out ", rapid.IntRange(0, 100).Draw(t, "out"))}}}
		}
		var lists ToolLists
		row, _, err := Build(nil, nil, tail, store.Checkpoint{Seq: 4, Action: a, Result: res}, 42, &lists)
		if err != nil {
			t.Fatal(err)
		}
		if (len(tools) > 0) != (row.Tools != nil) || (len(tools) > 0) != (row.NewTools != nil) {
			t.Fatalf("tools %d, digest %x, new %d bytes", len(tools), row.Tools, len(row.NewTools))
		}
		stored := map[string][]byte{}
		if row.NewTools != nil {
			stored[string(row.Tools)] = row.NewTools
			lists.Stored(row.Tools)
		}
		back := Row{Seq: row.Seq, Created: row.Created, MsgCount: row.MsgCount, MsgSum: row.MsgSum, Body: append([]byte(nil), row.Body...)}
		if err := back.Open(); err != nil {
			t.Fatal(err)
		}
		for name, p := range map[string][2][]byte{"action": {row.Action, back.Action}, "result": {row.Result, back.Result},
			"head": {row.Head, back.Head}, "msgs": {row.Msgs, back.Msgs}, "tools": {row.Tools, back.Tools}} {
			if !bytes.Equal(p[0], p[1]) || (p[0] == nil) != (p[1] == nil) {
				t.Fatalf("%s: built %x, opened %x", name, p[0], p[1])
			}
		}
		log, err := back.AppendTo("r", append([]core.Message(nil), msgs[:before]...), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var fresh ToolLists
		rec, err := back.Record("r", log, func(d []byte) ([]core.Tool, error) {
			return fresh.Resolve(d, func(d []byte) ([]byte, error) { return stored[string(d)], nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := core.EncodeAction(a)
		got, _ := core.EncodeAction(rec.Action)
		if !bytes.Equal(want, got) {
			t.Fatalf("action: %x, want %x", got, want)
		}
		// A second model call with the same tools needs no new list.
		if len(tools) > 0 {
			again, _, err := Build(nil, nil, row.Tail(1, store.StatusRunning), store.Checkpoint{Seq: 5, Action: a}, 43, &lists)
			if err != nil || again.NewTools != nil || !bytes.Equal(again.Tools, row.Tools) {
				t.Fatalf("the same list again: %v, new %d bytes", err, len(again.NewTools))
			}
		}
	})
}

// TestRowsCompress: a tool step's output and the tool message carrying it
// compress against each other; a body that does not shrink is stored plain.
func TestRowsCompress(t *testing.T) {
	out := strings.Repeat("stepwise-bench ", 13)
	st := state(core.Message{Role: core.RoleUser, Content: "go"}, core.Message{Role: core.RoleTool, CallID: "c", Content: out})
	a := core.RequestModelCall{Role: core.Primary, Messages: st.Messages, State: st}
	res := core.ToolResults{Results: []core.ToolResult{{CallID: "c", Output: out}}}
	enc, sum := EncodeMessages(nil, st.Messages[:1])
	_ = enc
	row, _, err := Build(nil, nil, Tail{MsgCount: 1, MsgSum: sum}, store.Checkpoint{Seq: 2, Action: a, Result: res}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := len(row.Action) + len(row.Result) + len(row.Head) + len(row.Msgs)
	if row.Body[len(row.Body)-1] != formatS2 || len(row.Body) > plain-len(out)/2 {
		t.Fatalf("body %d bytes (format %d) for %d bytes of parts", len(row.Body), row.Body[len(row.Body)-1], plain)
	}
	small, _, _ := Build(nil, nil, Tail{}, store.Checkpoint{Seq: 1, Action: core.RequestModelCall{Role: core.Primary, State: state()}}, 1, nil)
	if small.Body[len(small.Body)-1] != formatPlain {
		t.Fatalf("a tiny body was compressed: %x", small.Body)
	}
}

// TestCorruptBodiesAreRefused: every truncation or flipped byte of a body is
// either refused by Open or changes what it opens to (the checksum, checked
// before, catches the rest).
func TestCorruptBodiesAreRefused(t *testing.T) {
	st := state(core.Message{Role: core.RoleUser, Content: strings.Repeat("abc ", 40)})
	row, _, err := Build(nil, nil, Tail{}, store.Checkpoint{Seq: 1, Action: core.RequestModelCall{Role: core.Primary, State: st}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	row.Sum = StepSum(7, &row)
	for n := 0; n < len(row.Body); n++ {
		r := row
		r.Body = row.Body[:n]
		if r.Open() == nil && r.Verify("r", 7) == nil {
			t.Fatalf("a body cut to %d bytes passed", n)
		}
	}
	for i := range row.Body {
		r := row
		r.Body = append([]byte(nil), row.Body...)
		r.Body[i] ^= 0x5a
		if err := r.Verify("r", 7); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("a flipped byte %d passed the checksum", i)
		}
	}
}

func TestSegmentsRoundTrip(t *testing.T) {
	var segs []Segment
	var want []core.Message
	for s := range 3 {
		var body []byte
		var msgs []core.Message
		for i := range 20 {
			msgs = append(msgs, core.Message{Role: core.RoleTool, Content: strings.Repeat("x", s*10+i)})
		}
		body, _ = EncodeMessages(body, msgs)
		segs = append(segs, NewSegment(9, s*SegmentSteps, s*SegmentSteps+SegmentSteps-1, len(want), len(msgs), body))
		want = append(want, msgs...)
	}
	if err := CheckSegments("r", 9, 200, len(want), segs); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1 << 30, 0} { // serial, then parallel
		parallelDecodeBytes = size
		got, err := DecodeSegments(nil, segs, nil)
		if err != nil || len(got) != len(want) || got[59].Content != want[59].Content {
			t.Fatalf("decode: %d messages, %v", len(got), err)
		}
	}
	parallelDecodeBytes = 64 << 10
	segs[1].Body[0] ^= 1
	if err := CheckSegments("r", 9, 200, len(want), segs); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a corrupt segment: %v", err)
	}
}

// TestBlobsRef: Ref gives each body its SHA-256, from the bodies it
// remembers as from those it hashes, whatever the caller does with its
// slice afterwards; a body the store holds is not given back to store.
func TestBlobsRef(t *testing.T) {
	var b Blobs
	bodies := [][]byte{[]byte("config one"), []byte("instructions"), []byte("config two")}
	for round := range 3 {
		for _, body := range bodies {
			in := bytes.Clone(body)
			digest, fresh := b.Ref(in)
			if !bytes.Equal(digest, BlobSum(body)) {
				t.Fatalf("round %d: %q got the digest of another body", round, body)
			}
			if round == 0 && !bytes.Equal(fresh, body) || round > 0 && fresh != nil {
				t.Fatalf("round %d: %q fresh %q", round, body, fresh)
			}
			in[0] ^= 0xff // the caller reuses its slice
			b.Stored(digest)
		}
	}
}
