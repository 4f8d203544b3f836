package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/stepwise-agent/stepwise/core/internal/wire"
)

// The hand-written encoders must give the library's bytes, byte for byte.

// libraryEnvelope is EncodeAction and EncodeResult as they were before the
// fast paths: the body marshalled by the library, then the envelope.
func libraryEnvelope(kind string, v any) ([]byte, error) {
	body, err := wire.EncMode().Marshal(v)
	if err != nil {
		return nil, err
	}
	return wire.EncMode().Marshal(wire.Envelope{Kind: kind, Body: body})
}

// sameAsLibrary checks that fast appends the library's encoding of every value
// gen draws, after a prefix it leaves alone.
func sameAsLibrary[T any](gen *rapid.Generator[T], fast func([]byte, *T) []byte) func(*testing.T) {
	return func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			v := gen.Draw(t, "v")
			want, err := wire.EncMode().Marshal(v)
			if err != nil {
				t.Fatalf("library: %v", err)
			}
			prefix := []byte("prefix")
			got := fast(prefix[:len(prefix):len(prefix)], &v)
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("prefix overwritten: %x", got)
			}
			if got := got[len(prefix):]; !bytes.Equal(got, want) {
				t.Fatalf("fast and library differ for %#v\nfast:    %x\nlibrary: %x", v, got, want)
			}
		})
	}
}

func TestFastEncodersMatchLibrary(t *testing.T) {
	t.Run("Message", sameAsLibrary(genMessage(genText()), appendMessage))
	t.Run("ToolCall", sameAsLibrary(genToolCall(genText()), appendToolCall))
	t.Run("ToolResult", sameAsLibrary(genToolResult(genText()), appendToolResult))
	t.Run("Attachment", sameAsLibrary(genAttachment(genText()), appendAttachment))
	t.Run("Request", sameAsLibrary(rapid.Custom(func(t *rapid.T) Request { return Request{Input: genText().Draw(t, "input")} }), appendRequest))
	t.Run("Pending", sameAsLibrary(genPending(genText()), appendPending))
	t.Run("Turn", sameAsLibrary(genTurn(genText()), appendTurn))
	t.Run("Program", sameAsLibrary(genProgram(), appendProgram))
	t.Run("Counters", sameAsLibrary(genCounters(genText()), appendCounters))
	t.Run("Failure", sameAsLibrary(genFailure(genText()), appendFailure))
	t.Run("State", sameAsLibrary(genState(genText()), appendState))
	t.Run("Complete", sameAsLibrary(genComplete(genText()), appendComplete))
	t.Run("Fail", sameAsLibrary(genFail(genText()), appendFail))
	t.Run("RequestModelCall", sameAsLibrary(genRequestModelCall(genText()), appendRequestModelCall))
	t.Run("Tool", sameAsLibrary(genTool(genText()), appendTool))
	t.Run("RequestToolCalls", sameAsLibrary(genRequestToolCalls(genText()), appendRequestToolCalls))
	t.Run("RequestExternalToolCalls", sameAsLibrary(genRequestExternalToolCalls(genText()), appendRequestExternalToolCalls))
	t.Run("ModelReply", sameAsLibrary(genModelReply(genText()), appendModelReply))
	t.Run("NativeCall", sameAsLibrary(genNativeCall(genText()), appendNativeCall))
	t.Run("Usage", sameAsLibrary(genUsage(), appendUsage))
	t.Run("Opaque", sameAsLibrary(genOpaque(genText()), appendOpaque))
	t.Run("ToolResults", sameAsLibrary(genToolResults(genText()), appendToolResults))
}

// The exported encoders give what the library gave before the fast paths,
// for types with a fast path and for those that fall back.
func TestEncodeMatchesLibrary(t *testing.T) {
	text := genText()
	t.Run("EncodeState", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			st := genState(text).Draw(t, "state")
			got, err := EncodeState(st)
			want, _ := wire.EncMode().Marshal(st)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("err=%v\nfast:    %x\nlibrary: %x", err, got, want)
			}
		})
	})
	t.Run("EncodeMessages", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			msgs := genList(genMessage(text)).Draw(t, "messages")
			got, err := EncodeMessages(msgs)
			want, _ := wire.EncMode().Marshal(msgs)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("err=%v\nfast:    %x\nlibrary: %x", err, got, want)
			}
			var appended []byte
			for _, m := range msgs {
				appended = AppendMessage(appended, m)
			}
			if len(msgs) > 0 && !bytes.HasSuffix(got, appended) {
				t.Fatalf("AppendMessage one by one differs from EncodeMessages: %x vs %x", appended, got)
			}
		})
	})
	t.Run("EncodeAction", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a := genAction(text).Draw(t, "action")
			got, err := EncodeAction(a)
			if err != nil {
				t.Fatal(err)
			}
			body := a
			if m, ok := a.(RequestModelCall); ok && m.Role == Primary {
				m.Messages = nil
				body = m
			}
			want, err := libraryEnvelope(ActionKind(a), body)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T: err=%v\nfast:    %x\nlibrary: %x", a, err, got, want)
			}
		})
	})
	t.Run("EncodeResult", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			r := genResult(text).Draw(t, "result")
			got, err := EncodeResult(r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := libraryEnvelope(ResultKind(r), r)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T: err=%v\nfast:    %x\nlibrary: %x", r, err, got, want)
			}
		})
	})
}

// The Append forms add exactly the Encode forms' bytes to what dst holds,
// leaving those alone, and reuse dst's room: into a buffer that already
// has it, they do not allocate.
func TestAppendEncoders(t *testing.T) {
	text := genText()
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "prefix")
		st := genState(text).Draw(t, "state")
		a := genAction(text).Draw(t, "action")
		r := genResult(text).Draw(t, "result")
		wantState, _ := EncodeState(st)
		wantAction, err1 := EncodeAction(a)
		wantResult, err2 := EncodeResult(r)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		dst := append([]byte(nil), prefix...)
		dst = AppendState(dst, st)
		var err error
		if dst, err = AppendAction(dst, a); err != nil {
			t.Fatal(err)
		}
		if dst, err = AppendResult(dst, r); err != nil {
			t.Fatal(err)
		}
		want := slices.Concat(prefix, wantState, wantAction, wantResult)
		if !bytes.Equal(dst, want) {
			t.Fatalf("appended %x\nwant     %x", dst, want)
		}
		// Into a buffer with room, nothing is allocated: the bytes land in
		// the buffer itself. (Checked by aliasing, not by counting
		// allocations, which other goroutines of the process disturb;
		// BenchmarkEncodeStep counts them.)
		// The room is what the encoder reserves: stateSize is a bound,
		// which for a small state with empty turn results can pass twice
		// its bytes (a draw once in a few thousand failed on 2x).
		room := make([]byte, 0, max(2*len(want), stateSize(&st)))
		if out := AppendState(room[:0], st); len(out) == 0 || &out[:1][0] != &room[:1][0] {
			t.Fatal("AppendState into a buffer with room moved to another buffer")
		}
	})
	if _, err := AppendAction([]byte{1}, nil); err == nil {
		t.Fatal("AppendAction of no action succeeded")
	}
}

// The fast paths take one allocation: the size estimates are upper bounds.
// An encoding allocates exactly its estimate once (grow), and append would
// allocate a second, larger buffer were the estimate short; so the result's
// capacity equals the estimate exactly when one allocation sufficed. This
// is deterministic, where counting allocations is not (other goroutines
// allocate too); BenchmarkEncodeStep counts them.
func TestEncodeAllocatesOnce(t *testing.T) {
	text := genText()
	once := func(t *rapid.T, what string, b []byte, estimate int) {
		if cap(b) != estimate || len(b) > estimate {
			t.Fatalf("%s: %d bytes in a buffer of %d, the estimate %d: more than one allocation", what, len(b), cap(b), estimate)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		st := genState(text).Draw(t, "state")
		b, _ := EncodeState(st)
		once(t, "EncodeState", b, stateSize(&st))
		msgs := rapid.SliceOfN(genMessage(text), 1, 4).Draw(t, "messages")
		b, _ = EncodeMessages(msgs)
		once(t, "EncodeMessages", b, messagesSize(msgs))
		a := rapid.OneOf(
			genComplete(text).AsAny(), genFail(text).AsAny(), genRequestToolCalls(text).AsAny(),
			genRequestExternalToolCalls(text).AsAny(), genRequestModelCall(text).AsAny(),
		).Draw(t, "action").(Action)
		b, _ = EncodeAction(a)
		if m, ok := a.(RequestModelCall); ok && m.Role == Primary {
			m.Messages = nil
			a = m
		}
		size, _ := actionFieldsSize(a)
		once(t, fmt.Sprintf("EncodeAction(%T)", a), b, wire.EnvelopeSize(ActionKind(a), size))
		r := rapid.OneOf(genModelReply(text).AsAny(), genToolResults(text).AsAny()).Draw(t, "result").(Result)
		b, _ = EncodeResult(r)
		size, _ = resultFieldsSize(r)
		once(t, fmt.Sprintf("EncodeResult(%T)", r), b, wire.EnvelopeSize(ResultKind(r), size))
	})
}

// What the new encoders write decodes back to values that encode to the
// same bytes (for strings the decoder accepts: valid UTF-8).
func TestFastEncodingRoundTrips(t *testing.T) {
	text := genValidText()
	t.Run("State", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			st := genState(text).Draw(t, "state")
			if rapid.Bool().Draw(t, "valid") {
				st.Version, st.Phase, st.Failure, st.Pending = StateVersion, PhaseModel, nil, nil
			}
			b, _ := EncodeState(st)
			back, err := DecodeState(b)
			if want := checkState(st); (err == nil) != (want == nil) {
				t.Fatalf("DecodeState: %v, checkState: %v", err, want)
			}
			if err != nil {
				return
			}
			if again, _ := EncodeState(back); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
			}
		})
	})
	t.Run("Action", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a := genAction(text).Draw(t, "action")
			b, _ := EncodeAction(a)
			back, err := DecodeAction(b, a.Next())
			if err != nil {
				t.Fatalf("DecodeAction: %v", err)
			}
			if again, _ := EncodeAction(back); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
			}
		})
	})
	t.Run("Result", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			r := genResult(text).Draw(t, "result")
			b, _ := EncodeResult(r)
			back, err := DecodeResult(b)
			if err != nil {
				t.Fatalf("DecodeResult: %v", err)
			}
			if again, _ := EncodeResult(back); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
			}
		})
	})
}

// Some encodings spelled out, so the rules the encoders follow are on record.
func TestFastEncodingExamples(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"empty message", appendMessage(nil, &Message{}), "a0"},
		{"turn of nil slices is nulls", appendTurn(nil, &Turn{}), "a201f602f6"},
		{"turn of empty slices", appendTurn(nil, &Turn{Calls: []ToolCall{}, Results: []ToolResult{}}), "a2018002 80"},
		{"empty args omitted", appendToolCall(nil, &ToolCall{Args: json.RawMessage{}}), "a0"},
		{"args are a byte string", appendToolCall(nil, &ToolCall{Args: json.RawMessage(`{}`)}), "a103 42 7b7d"},
		{"raw is text", appendToolCall(nil, &ToolCall{ID: "c", Raw: "f()"}), "a201 6163 04 63662829"},
		{"program: message always, step when set", appendTurn(nil, &Turn{Program: &Program{}}), "a301f602f605 a10100"},
		{"empty usage omitted", appendModelReply(nil, &ModelReply{}), "a0"},
		{"usage", appendModelReply(nil, &ModelReply{Usage: Usage{CompletionTokens: 1}}), "a104 a10201"},
		{"usage details", appendModelReply(nil, &ModelReply{Usage: Usage{CachedTokens: 2, ReasoningTokens: 3}}), "a104 a2 0302 0403"},
		{"nil opaque omitted", appendMessage(nil, &Message{Role: RoleAssistant}), "a1 0169 617373697374616e74"},
		{"opaque", appendMessage(nil, &Message{Opaque: &Opaque{Provider: "p", Data: []byte{1}}}), "a1 08 a2 0161 70 0241 01"},
		{"empty opaque kept", appendModelReply(nil, &ModelReply{Opaque: &Opaque{Data: []byte{}}}), "a1 06 a0"},
		{"negative ints", appendCounters(nil, &Counters{Steps: -1, Bytes: -25}), "a2 0120 08 3818"},
		{"int heads", appendCounters(nil, &Counters{Steps: 23, ModelCalls: 24, Corrections: 256, Escalations: 1 << 16, Repeats: 1 << 32}),
			"a5 0117 021818 03190100 041a00010000 051b0000000100000000"},
		{"tool: json names, shortest first", appendTool(nil, &Tool{Name: "t", Mode: ModeMCP, Idempotent: true, Parameters: json.RawMessage(`{}`), Description: "d", MaxResultBytes: 1}),
			"a6 646d6f6465 636d6370 646e616d65 6174 6a6964656d706f74656e74 f5 6a706172616d6574657273 427b7d 6b6465736372697074696f6e 6164 706d61785f726573756c745f6279746573 01"},
		{"state keys 10 to 12", appendState(nil, &State{Answer: "a", Failure: &Failure{}, Escalation: "e"}),
			"a7 0100 02a0 0360 07a0 0a6161 0ba2 0160 0260 0c6165"},
		{"envelope", appendFail(wire.AppendEnvelope(nil, "fail"), &Fail{}), "a2 0164 6661696c 02 a2 0160 0260"},
	} {
		want := strings.ReplaceAll(c.want, " ", "")
		if got := fmt.Sprintf("%x", c.got); got != want {
			t.Errorf("%s: got %s, want %s", c.name, got, want)
		}
	}
}

// fastFields lists, for each type with a hand-written encoder, the fields the
// encoder handles, as "Name Type `tag`" with the tag the library reads (cbor,
// else json). A field added, removed, retyped or retagged fails the test until
// the encoder in encode_fast.go and this list are updated together.
var fastFields = map[reflect.Type][]string{
	reflect.TypeFor[Message](): {
		"Role core.Role `1,keyasint,omitempty`", "Content string `2,keyasint,omitempty`",
		"Calls []core.ToolCall `3,keyasint,omitempty`", "CallID string `4,keyasint,omitempty`",
		"Name string `5,keyasint,omitempty`", "IsError bool `6,keyasint,omitempty`",
		"Attachments []core.Attachment `7,keyasint,omitempty`",
		"Opaque *core.Opaque `8,keyasint,omitempty`",
	},
	reflect.TypeFor[Opaque](): {"Provider string `1,keyasint,omitempty`", "Data []uint8 `2,keyasint,omitempty`"},
	reflect.TypeFor[ToolCall](): {
		"ID string `1,keyasint,omitempty`", "Name string `2,keyasint,omitempty`",
		"Args json.RawMessage `3,keyasint,omitempty`", "Raw string `4,keyasint,omitempty`",
	},
	reflect.TypeFor[ToolResult](): {
		"CallID string `1,keyasint,omitempty`", "Output string `2,keyasint,omitempty`",
		"Error string `3,keyasint,omitempty`", "Sources []string `4,keyasint,omitempty`",
		"Attachments []core.Attachment `5,keyasint,omitempty`", "Transient bool `-`",
		"Cached bool `6,keyasint,omitempty`", "Spent *core.Spent `7,keyasint,omitempty`",
	},
	reflect.TypeFor[Spent](): {
		"PromptTokens int `1,keyasint,omitempty`", "CompletionTokens int `2,keyasint,omitempty`",
		"Cost int64 `3,keyasint,omitempty`", "ToolCalls int `4,keyasint,omitempty`",
	},
	reflect.TypeFor[Attachment](): {"MIME string `1,keyasint,omitempty`", "Data []uint8 `2,keyasint,omitempty`"},
	reflect.TypeFor[Request]():    {"Input string `1,keyasint,omitempty`", "History int `2,keyasint,omitempty`", "Messages []core.Message `-`"},
	reflect.TypeFor[Pending](): {
		"Kind core.PendingKind `1,keyasint`", "Role core.ModelRole `2,keyasint,omitempty`",
		"CallIDs []string `3,keyasint,omitempty`",
	},
	reflect.TypeFor[Turn](): {
		"Calls []core.ToolCall `1,keyasint`", "Results []core.ToolResult `2,keyasint`",
		"Stopped bool `3,keyasint,omitempty`", "Native bool `4,keyasint,omitempty`",
		"Program *core.Program `5,keyasint,omitempty`", "Parse *core.ParseMeta `6,keyasint,omitempty`",
	},
	reflect.TypeFor[ParseMeta](): {
		"Format core.Format `1,keyasint,omitempty`", "Spans []core.Span `2,keyasint,omitempty`",
		"Warnings []string `3,keyasint,omitempty`",
	},
	reflect.TypeFor[Span]():    {"Start int `1,keyasint,omitempty`", "End int `2,keyasint,omitempty`"},
	reflect.TypeFor[Program](): {"Message int `1,keyasint`", "Step int `2,keyasint,omitempty`"},
	reflect.TypeFor[Counters](): {
		"Steps int `1,keyasint,omitempty`", "ModelCalls int `2,keyasint,omitempty`",
		"Corrections int `3,keyasint,omitempty`", "Escalations int `4,keyasint,omitempty`",
		"Repeats int `5,keyasint,omitempty`", "PromptTokens int `6,keyasint,omitempty`",
		"CompletionTokens int `7,keyasint,omitempty`", "Bytes int `8,keyasint,omitempty`",
		"LastCall string `9,keyasint,omitempty`", "LowQuality int `10,keyasint,omitempty`",
		"ToolCalls int `11,keyasint,omitempty`", "Cost int64 `12,keyasint,omitempty`",
		"Compactions int `13,keyasint,omitempty`",
	},
	reflect.TypeFor[CallLog](): {
		"Calls []string `1,keyasint,omitempty`", "Outcomes []string `2,keyasint,omitempty`",
		"Stale int `3,keyasint,omitempty`", "Warned bool `4,keyasint,omitempty`",
	},
	reflect.TypeFor[Failure](): {"Code core.FailCode `1,keyasint`", "Reason string `2,keyasint`"},
	reflect.TypeFor[ContextState](): {
		"Head int `1,keyasint,omitempty`", "Summary int `2,keyasint,omitempty`", "From int `3,keyasint,omitempty`",
		"ElideBelow int `4,keyasint,omitempty`", "Cap int `5,keyasint,omitempty`", "Tokens int `6,keyasint,omitempty`",
		"Counted int `7,keyasint,omitempty`", "Prompt int `8,keyasint,omitempty`", "PromptAt int `9,keyasint,omitempty`",
		"Cut int `10,keyasint,omitempty`", "Words int `11,keyasint,omitempty`", "Limit int `12,keyasint,omitempty`",
		"Retried bool `13,keyasint,omitempty`", "BytesPerToken int `14,keyasint,omitempty`",
	},
	reflect.TypeFor[Conversation](): {
		"Turn int `1,keyasint,omitempty`", "Input string `2,keyasint,omitempty`",
		"Queue []string `3,keyasint,omitempty`", "Base core.Counters `4,keyasint,omitempty`",
		"At int `5,keyasint,omitempty`",
	},
	reflect.TypeFor[State](): {
		"Version int `1,keyasint`", "Request core.Request `2,keyasint`", "Phase core.Phase `3,keyasint`",
		"Messages []core.Message `4,keyasint,omitempty`", "Pending *core.Pending `5,keyasint,omitempty`",
		"Turn *core.Turn `6,keyasint,omitempty`", "Counters core.Counters `7,keyasint`",
		"ToolsUsed []string `8,keyasint,omitempty`", "Sources []string `9,keyasint,omitempty`",
		"Answer string `10,keyasint,omitempty`", "Failure *core.Failure `11,keyasint,omitempty`",
		"Escalation string `12,keyasint,omitempty`", "Recent *core.CallLog `13,keyasint,omitempty`",
		"ToolsOK []string `14,keyasint,omitempty`",
		"Conv *core.Conversation `15,keyasint,omitempty`",
		"Ctx *core.ContextState `16,keyasint,omitempty`",
		"Structured bool `17,keyasint,omitempty`",
	},
	reflect.TypeFor[Complete](): {
		"Answer string `1,keyasint,omitempty`", "ToolsUsed []string `2,keyasint,omitempty`",
		"Sources []string `3,keyasint,omitempty`", "Output json.RawMessage `-`", "State core.State `-`",
	},
	reflect.TypeFor[Fail](): {"Code core.FailCode `1,keyasint`", "Reason string `2,keyasint`", "State core.State `-`"},
	reflect.TypeFor[RequestModelCall](): {
		"Role core.ModelRole `1,keyasint`", "Messages []core.Message `2,keyasint,omitempty`",
		"Tools []core.Tool `3,keyasint,omitempty`", "State core.State `-`",
	},
	reflect.TypeFor[Tool](): {
		"Name string `name`", "Description string `description,omitempty`",
		"Parameters json.RawMessage `parameters,omitempty`", "Mode core.ToolMode `mode,omitempty`",
		"Idempotent bool `idempotent,omitempty`", "MaxResultBytes int `max_result_bytes,omitempty`",
		"Summary *core.Summary `-`", // not part of what a model call is sent
		"SummaryLabel string `-`",   // nor this
		"EndsTurn bool `-`",         // nor this
	},
	reflect.TypeFor[RequestToolCalls](): {
		"Calls []core.ToolCall `1,keyasint`", "Parallel bool `2,keyasint,omitempty`",
		"StopOnError bool `3,keyasint,omitempty`", "State core.State `-`",
	},
	reflect.TypeFor[RequestExternalToolCalls](): {"Calls []core.ToolCall `1,keyasint`", "State core.State `-`"},
	reflect.TypeFor[ModelReply](): {
		"Text string `1,keyasint,omitempty`", "Calls []core.NativeCall `2,keyasint,omitempty`",
		"FinishReason string `3,keyasint,omitempty`", "Usage core.Usage `4,keyasint,omitempty`",
		"Error string `5,keyasint,omitempty`", "Opaque *core.Opaque `6,keyasint,omitempty`",
		"Overflow bool `7,keyasint,omitempty`",
	},
	reflect.TypeFor[NativeCall](): {
		"ID string `1,keyasint,omitempty`", "Name string `2,keyasint,omitempty`",
		"Arguments string `3,keyasint,omitempty`",
	},
	reflect.TypeFor[Usage](): {
		"PromptTokens int `1,keyasint,omitempty`", "CompletionTokens int `2,keyasint,omitempty`",
		"CachedTokens int `3,keyasint,omitempty`", "ReasoningTokens int `4,keyasint,omitempty`",
	},
	reflect.TypeFor[ToolResults]():   {"Results []core.ToolResult `1,keyasint`"},
	reflect.TypeFor[wire.Envelope](): {"Kind string `1,keyasint`", "Body cbor.RawMessage `2,keyasint`"},
}

func TestFastEncodersKnowEveryField(t *testing.T) {
	for typ, known := range fastFields {
		var have []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag, ok := f.Tag.Lookup("cbor")
			if !ok {
				tag = f.Tag.Get("json")
			}
			have = append(have, fmt.Sprintf("%s %s `%s`", f.Name, f.Type, tag))
		}
		if strings.Join(have, "\n") != strings.Join(known, "\n") {
			t.Errorf("core.%s changed: update its encoder in encode_fast.go, then fastFields\nnot known to the encoder: %q\ngone from the struct:     %q\n(order matters too)",
				typ.Name(), missing(have, known), missing(known, have))
		}
	}
}

// missing lists the entries of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestToolsRoundTrip: a tool list encodes as it does inside a model call's
// action and decodes back to the same bytes.
func TestToolsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tools := rapid.SliceOfN(genTool(rapid.String()), 1, 5).Draw(t, "tools")
		b := AppendTools(nil, tools)
		want, err := wire.EncMode().Marshal(tools)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("AppendTools %x, library %x", b, want)
		}
		back, err := DecodeTools(b)
		if err != nil {
			t.Fatal(err)
		}
		if again := AppendTools(nil, back); !bytes.Equal(again, b) {
			t.Fatalf("round trip %x, want %x", again, b)
		}
	})
}
