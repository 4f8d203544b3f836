package core

import (
	"bytes"
	"testing"
)

// TestOpaqueGoesBackToTheModel: a reply's opaque data is kept with the
// assistant message the core makes of it, goes out with the next model
// call, survives the state's encoding, and is left out of the state when
// absent.
func TestOpaqueGoesBackToTheModel(t *testing.T) {
	cfg := testConfig()
	st := mustStart(t, cfg, "find x")
	a := mustStep(t, cfg, st)
	op := &Opaque{Provider: "anthropic", Data: []byte(`[{"type":"thinking","thinking":"hm","signature":"c2ln"}]`)}
	st = mustResume(t, cfg, a.Next(), ModelReply{Calls: []NativeCall{call("c1", "search", `{"query":"x"}`)}, Opaque: op})
	a = mustStep(t, cfg, st)
	st = mustResume(t, cfg, a.Next(), ToolResults{Results: []ToolResult{{CallID: "c1", Output: "42"}}})
	m := mustStep(t, cfg, st).(RequestModelCall)
	var got *Opaque
	for _, msg := range m.Messages {
		if msg.Role == RoleAssistant {
			got = msg.Opaque
		}
	}
	if got == nil || got.Provider != "anthropic" || !bytes.Equal(got.Data, op.Data) {
		t.Fatalf("the assistant message carries %+v, want %+v", got, op)
	}
	if d := DescribeMessage(m.Messages[2]); d != `assistant: "" call(c1 search {"query":"x"}) opaque(anthropic 56 bytes)` {
		t.Errorf("DescribeMessage = %s", d)
	}

	b, err := EncodeState(m.State)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if o := back.Messages[2].Opaque; o == nil || !bytes.Equal(o.Data, op.Data) {
		t.Errorf("decoded opaque = %+v", o)
	}

	// Without opaque data the state's bytes are what they were before the
	// field existed: no key 7 in any message.
	plain := mustResume(t, cfg, mustStep(t, cfg, mustStart(t, cfg, "x")).Next(), ModelReply{Text: "hi"})
	pb, err := EncodeState(plain)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\xa2\x01\x69assistant\x02\x62hi"; !bytes.Contains(pb, []byte(want)) {
		t.Errorf("the assistant message is not encoded as before: %x", pb)
	}
}
