package core

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/stepwise-agent/stepwise/core/internal/wire"
)

// Generators. Strings come from text, so the same generators serve the
// byte-for-byte tests (any bytes) and the round trips (valid UTF-8).

// genText draws strings around every head boundary, empty ones often,
// non-ASCII and invalid UTF-8.
func genText() *rapid.Generator[string] {
	return rapid.OneOf(
		genValidText(),
		rapid.Custom(func(t *rapid.T) string { return string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")) }),
		rapid.Just("\xff\xfe"),
	)
}

func genValidText() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.Just(""),
		rapid.StringMatching(`[a-z_]{1,12}`),
		rapid.String(),
		rapid.Just("héllo, 世界 🌍"),
		rapid.Custom(func(t *rapid.T) string {
			n := rapid.SampledFrom([]int{23, 24, 255, 256, 65535, 65536}).Draw(t, "boundary")
			n += rapid.IntRange(-1, 1).Draw(t, "off-by")
			return strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		}),
	)
}

func genInt() *rapid.Generator[int] {
	return rapid.OneOf(
		rapid.Just(0),
		rapid.IntRange(-300, 300),
		rapid.Int(),
		rapid.SampledFrom([]int{23, 24, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
			-1, -24, -25, -256, -257, -65536, -65537, -math.MaxUint32 - 1, -math.MaxUint32 - 2, math.MinInt64}),
	)
}

// genList draws nil, empty and short slices.
func genList[T any](elem *rapid.Generator[T]) *rapid.Generator[[]T] {
	return rapid.OneOf(rapid.Just([]T(nil)), rapid.Just([]T{}), rapid.SliceOfN(elem, 1, 4))
}

// genPtr draws nil or a pointer to a value of elem.
func genPtr[T any](elem *rapid.Generator[T]) *rapid.Generator[*T] {
	return rapid.Custom(func(t *rapid.T) *T {
		if rapid.Bool().Draw(t, "nil") {
			return nil
		}
		v := elem.Draw(t, "elem")
		return &v
	})
}

func genBytes() *rapid.Generator[json.RawMessage] {
	return rapid.OneOf(
		rapid.Just(json.RawMessage(nil)),
		rapid.Just(json.RawMessage{}),
		rapid.Just(json.RawMessage(`{"q":"x"}`)),
		rapid.Custom(func(t *rapid.T) json.RawMessage { return rapid.SliceOf(rapid.Byte()).Draw(t, "bytes") }),
		rapid.Custom(func(t *rapid.T) json.RawMessage {
			return bytes.Repeat([]byte("x"), rapid.SampledFrom([]int{23, 24, 255, 256, 65535, 65536}).Draw(t, "len"))
		}),
	)
}

func genToolCall(text *rapid.Generator[string]) *rapid.Generator[ToolCall] {
	return rapid.Custom(func(t *rapid.T) ToolCall {
		return ToolCall{ID: text.Draw(t, "id"), Name: text.Draw(t, "name"), Args: genBytes().Draw(t, "args"), Raw: text.Draw(t, "raw")}
	})
}

func genMessage(text *rapid.Generator[string]) *rapid.Generator[Message] {
	return rapid.Custom(func(t *rapid.T) Message {
		return Message{
			Role:        Role(text.Draw(t, "role")),
			Content:     text.Draw(t, "content"),
			Calls:       genList(genToolCall(text)).Draw(t, "calls"),
			CallID:      text.Draw(t, "call-id"),
			Name:        text.Draw(t, "name"),
			IsError:     rapid.Bool().Draw(t, "is-error"),
			Attachments: genList(genAttachment(text)).Draw(t, "attachments"),
			Opaque:      genOpaquePtr(text).Draw(t, "opaque"),
		}
	})
}

// genAttachment draws attachments, their data nil, empty or not.
func genAttachment(text *rapid.Generator[string]) *rapid.Generator[Attachment] {
	return rapid.Custom(func(t *rapid.T) Attachment {
		return Attachment{MIME: text.Draw(t, "mime"), Data: genList(rapid.Byte()).Draw(t, "data")}
	})
}

func genOpaque(text *rapid.Generator[string]) *rapid.Generator[Opaque] {
	return rapid.Custom(func(t *rapid.T) Opaque {
		return Opaque{Provider: text.Draw(t, "provider"), Data: genBytes().Draw(t, "data")}
	})
}

// genOpaquePtr is mostly nil, as in most messages.
func genOpaquePtr(text *rapid.Generator[string]) *rapid.Generator[*Opaque] {
	return rapid.Custom(func(t *rapid.T) *Opaque {
		if rapid.IntRange(0, 3).Draw(t, "has-opaque") > 0 {
			return nil
		}
		o := genOpaque(text).Draw(t, "opaque")
		return &o
	})
}

func genToolResult(text *rapid.Generator[string]) *rapid.Generator[ToolResult] {
	return rapid.Custom(func(t *rapid.T) ToolResult {
		return ToolResult{
			CallID:      text.Draw(t, "call-id"),
			Output:      text.Draw(t, "output"),
			Error:       text.Draw(t, "error"),
			Sources:     genList(text).Draw(t, "sources"),
			Attachments: genList(genAttachment(text)).Draw(t, "attachments"),
			Cached:      rapid.Bool().Draw(t, "cached"),
			Spent: genPtr(rapid.Custom(func(t *rapid.T) Spent {
				return Spent{PromptTokens: genInt().Draw(t, "pt"), CompletionTokens: genInt().Draw(t, "ct"),
					Cost: int64(genInt().Draw(t, "cost")), ToolCalls: genInt().Draw(t, "tc")}
			})).Draw(t, "spent"),
		}
	})
}

func genPending(text *rapid.Generator[string]) *rapid.Generator[Pending] {
	return rapid.Custom(func(t *rapid.T) Pending {
		return Pending{
			Kind:    PendingKind(text.Draw(t, "kind")),
			Role:    ModelRole(text.Draw(t, "role")),
			CallIDs: genList(text).Draw(t, "call-ids"),
		}
	})
}

// genTurn draws turns whose results are shorter, as long as or longer than
// their calls.
func genTurn(text *rapid.Generator[string]) *rapid.Generator[Turn] {
	return rapid.Custom(func(t *rapid.T) Turn {
		return Turn{
			Calls:   genList(genToolCall(text)).Draw(t, "calls"),
			Results: genList(genToolResult(text)).Draw(t, "results"),
			Stopped: rapid.Bool().Draw(t, "stopped"),
			Native:  rapid.Bool().Draw(t, "native"),
			Program: genPtr(genProgram()).Draw(t, "program"),
			Parse:   genPtr(genParseMeta(text)).Draw(t, "parse"),
		}
	})
}

func genParseMeta(text *rapid.Generator[string]) *rapid.Generator[ParseMeta] {
	return rapid.Custom(func(t *rapid.T) ParseMeta {
		return ParseMeta{
			Format:   Format(text.Draw(t, "format")),
			Spans:    genList(rapid.Custom(func(t *rapid.T) Span { return Span{Start: genInt().Draw(t, "start"), End: genInt().Draw(t, "end")} })).Draw(t, "spans"),
			Warnings: genList(text).Draw(t, "warnings"),
		}
	})
}

func genProgram() *rapid.Generator[Program] {
	return rapid.Custom(func(t *rapid.T) Program {
		return Program{Message: genInt().Draw(t, "message"), Step: genInt().Draw(t, "step")}
	})
}

func genCounters(text *rapid.Generator[string]) *rapid.Generator[Counters] {
	return rapid.Custom(func(t *rapid.T) Counters {
		return Counters{
			Steps:            genInt().Draw(t, "steps"),
			ModelCalls:       genInt().Draw(t, "model-calls"),
			Corrections:      genInt().Draw(t, "corrections"),
			Escalations:      genInt().Draw(t, "escalations"),
			Repeats:          genInt().Draw(t, "repeats"),
			PromptTokens:     genInt().Draw(t, "prompt-tokens"),
			CompletionTokens: genInt().Draw(t, "completion-tokens"),
			Bytes:            genInt().Draw(t, "bytes"),
			LastCall:         text.Draw(t, "last-call"),
			LowQuality:       genInt().Draw(t, "low-quality"),
			ToolCalls:        genInt().Draw(t, "tool-calls"),
			Cost:             int64(genInt().Draw(t, "cost")),
			Compactions:      genInt().Draw(t, "compactions"),
		}
	})
}

func genCallLog(text *rapid.Generator[string]) *rapid.Generator[CallLog] {
	return rapid.Custom(func(t *rapid.T) CallLog {
		return CallLog{
			Calls:    genList(text).Draw(t, "calls"),
			Outcomes: genList(text).Draw(t, "outcomes"),
			Stale:    genInt().Draw(t, "stale"),
			Warned:   rapid.Bool().Draw(t, "warned"),
		}
	})
}

func genFailure(text *rapid.Generator[string]) *rapid.Generator[Failure] {
	return rapid.Custom(func(t *rapid.T) Failure {
		return Failure{Code: FailCode(text.Draw(t, "code")), Reason: text.Draw(t, "reason")}
	})
}

// genState draws states with and without messages, pending requests and
// turns; Version and Phase take any value, valid or not.
func genState(text *rapid.Generator[string]) *rapid.Generator[State] {
	phase := rapid.OneOf(rapid.SampledFrom([]Phase{PhaseRecall, PhaseModel, PhaseEscalate, PhaseTools, PhaseFinal, PhaseDone, PhaseFailed}),
		rapid.Custom(func(t *rapid.T) Phase { return Phase(text.Draw(t, "phase")) }))
	return rapid.Custom(func(t *rapid.T) State {
		return State{
			Version:    rapid.OneOf(rapid.Just(StateVersion), genInt()).Draw(t, "version"),
			Request:    Request{Input: text.Draw(t, "input"), History: genInt().Draw(t, "history")},
			Phase:      phase.Draw(t, "phase"),
			Messages:   genList(genMessage(text)).Draw(t, "messages"),
			Pending:    genPtr(genPending(text)).Draw(t, "pending"),
			Turn:       genPtr(genTurn(text)).Draw(t, "turn"),
			Counters:   genCounters(text).Draw(t, "counters"),
			ToolsUsed:  genList(text).Draw(t, "tools-used"),
			Sources:    genList(text).Draw(t, "sources"),
			Answer:     text.Draw(t, "answer"),
			Failure:    genPtr(genFailure(text)).Draw(t, "failure"),
			Escalation: text.Draw(t, "escalation"),
			Recent:     genPtr(genCallLog(text)).Draw(t, "call-log"),
			ToolsOK:    genList(text).Draw(t, "tools-ok"),
			Conv:       genPtr(genConversation(text)).Draw(t, "conversation"),
			Ctx:        genPtr(genContextState()).Draw(t, "context"),
			Structured: rapid.Bool().Draw(t, "structured"),
		}
	})
}

func genContextState() *rapid.Generator[ContextState] {
	return rapid.Custom(func(t *rapid.T) ContextState {
		return ContextState{
			Head: genInt().Draw(t, "head"), Summary: genInt().Draw(t, "summary"), From: genInt().Draw(t, "from"),
			ElideBelow: genInt().Draw(t, "elide-below"), Cap: genInt().Draw(t, "cap"), Tokens: genInt().Draw(t, "tokens"),
			Counted: genInt().Draw(t, "counted"), Prompt: genInt().Draw(t, "prompt"), PromptAt: genInt().Draw(t, "prompt-at"),
			Cut: genInt().Draw(t, "cut"), Words: genInt().Draw(t, "words"), Limit: genInt().Draw(t, "limit"),
			Retried: rapid.Bool().Draw(t, "retried"), BytesPerToken: genInt().Draw(t, "bpt"),
		}
	})
}

func genConversation(text *rapid.Generator[string]) *rapid.Generator[Conversation] {
	return rapid.Custom(func(t *rapid.T) Conversation {
		return Conversation{
			Turn:  genInt().Draw(t, "turn"),
			Input: text.Draw(t, "input"),
			Queue: genList(text).Draw(t, "queue"),
			Base:  genCounters(text).Draw(t, "base"),
			At:    genInt().Draw(t, "at"),
		}
	})
}

// genNext draws the continuation state of an action, which is never encoded
// with it: mostly empty, sometimes full.
func genNext(text *rapid.Generator[string]) *rapid.Generator[State] {
	return rapid.OneOf(rapid.Just(State{}), genState(text))
}

func genComplete(text *rapid.Generator[string]) *rapid.Generator[Complete] {
	return rapid.Custom(func(t *rapid.T) Complete {
		return Complete{
			Answer:    text.Draw(t, "answer"),
			ToolsUsed: genList(text).Draw(t, "tools-used"),
			Sources:   genList(text).Draw(t, "sources"),
			State:     genNext(text).Draw(t, "state"),
		}
	})
}

func genFail(text *rapid.Generator[string]) *rapid.Generator[Fail] {
	return rapid.Custom(func(t *rapid.T) Fail {
		return Fail{Code: FailCode(text.Draw(t, "code")), Reason: text.Draw(t, "reason"), State: genNext(text).Draw(t, "state")}
	})
}

func genTool(text *rapid.Generator[string]) *rapid.Generator[Tool] {
	return rapid.Custom(func(t *rapid.T) Tool {
		return Tool{
			Name:           text.Draw(t, "name"),
			Description:    text.Draw(t, "description"),
			Parameters:     genBytes().Draw(t, "parameters"),
			Mode:           ToolMode(text.Draw(t, "mode")),
			Idempotent:     rapid.Bool().Draw(t, "idempotent"),
			MaxResultBytes: genInt().Draw(t, "max-result-bytes"),
		}
	})
}

func genRequestModelCall(text *rapid.Generator[string]) *rapid.Generator[RequestModelCall] {
	role := rapid.OneOf(rapid.SampledFrom([]ModelRole{Primary, Helper}), rapid.Custom(func(t *rapid.T) ModelRole { return ModelRole(text.Draw(t, "role")) }))
	return rapid.Custom(func(t *rapid.T) RequestModelCall {
		return RequestModelCall{
			Role:     role.Draw(t, "role"),
			Messages: genList(genMessage(text)).Draw(t, "messages"),
			Tools:    genList(genTool(text)).Draw(t, "tools"),
			State:    genNext(text).Draw(t, "state"),
		}
	})
}

func genRequestToolCalls(text *rapid.Generator[string]) *rapid.Generator[RequestToolCalls] {
	return rapid.Custom(func(t *rapid.T) RequestToolCalls {
		return RequestToolCalls{
			Calls:       genList(genToolCall(text)).Draw(t, "calls"),
			Parallel:    rapid.Bool().Draw(t, "parallel"),
			StopOnError: rapid.Bool().Draw(t, "stop-on-error"),
			State:       genNext(text).Draw(t, "state"),
		}
	})
}

func genRequestExternalToolCalls(text *rapid.Generator[string]) *rapid.Generator[RequestExternalToolCalls] {
	return rapid.Custom(func(t *rapid.T) RequestExternalToolCalls {
		return RequestExternalToolCalls{Calls: genList(genToolCall(text)).Draw(t, "calls"), State: genNext(text).Draw(t, "state")}
	})
}

// genAction draws every kind of action, those without a fast path too.
func genAction(text *rapid.Generator[string]) *rapid.Generator[Action] {
	return rapid.Custom(func(t *rapid.T) Action {
		return rapid.OneOf(
			genComplete(text).AsAny(), genFail(text).AsAny(), genRequestModelCall(text).AsAny(),
			genRequestToolCalls(text).AsAny(), genRequestExternalToolCalls(text).AsAny(),
			rapid.Custom(func(t *rapid.T) any {
				return RequestMemorySearch{CallID: text.Draw(t, "call-id"), Query: text.Draw(t, "query"), Limit: genInt().Draw(t, "limit")}
			}),
			rapid.Custom(func(t *rapid.T) any {
				return RequestMemoryCreate{CallID: text.Draw(t, "call-id"), Entities: []Entity{{Name: text.Draw(t, "name")}}}
			}),
			rapid.Custom(func(t *rapid.T) any {
				return RequestMemoryTraverse{From: text.Draw(t, "from"), Depth: genInt().Draw(t, "depth")}
			}),
		).Draw(t, "action").(Action)
	})
}

func genNativeCall(text *rapid.Generator[string]) *rapid.Generator[NativeCall] {
	return rapid.Custom(func(t *rapid.T) NativeCall {
		return NativeCall{ID: text.Draw(t, "id"), Name: text.Draw(t, "name"), Arguments: text.Draw(t, "arguments")}
	})
}

func genUsage() *rapid.Generator[Usage] {
	return rapid.Custom(func(t *rapid.T) Usage {
		return Usage{PromptTokens: genInt().Draw(t, "prompt"), CompletionTokens: genInt().Draw(t, "completion"),
			CachedTokens: genInt().Draw(t, "cached"), ReasoningTokens: genInt().Draw(t, "reasoning")}
	})
}

func genModelReply(text *rapid.Generator[string]) *rapid.Generator[ModelReply] {
	return rapid.Custom(func(t *rapid.T) ModelReply {
		return ModelReply{
			Text:         text.Draw(t, "text"),
			Calls:        genList(genNativeCall(text)).Draw(t, "calls"),
			FinishReason: text.Draw(t, "finish-reason"),
			Usage:        genUsage().Draw(t, "usage"),
			Error:        text.Draw(t, "error"),
			Opaque:       genOpaquePtr(text).Draw(t, "opaque"),
			Overflow:     rapid.Bool().Draw(t, "overflow"),
		}
	})
}

func genToolResults(text *rapid.Generator[string]) *rapid.Generator[ToolResults] {
	return rapid.Custom(func(t *rapid.T) ToolResults {
		return ToolResults{Results: genList(genToolResult(text)).Draw(t, "results")}
	})
}

// genResult draws every kind of result, those without a fast path too.
func genResult(text *rapid.Generator[string]) *rapid.Generator[Result] {
	return rapid.Custom(func(t *rapid.T) Result {
		return rapid.OneOf(
			genModelReply(text).AsAny(), genToolResults(text).AsAny(),
			rapid.Custom(func(t *rapid.T) any { return Cancelled{Reason: text.Draw(t, "reason")} }),
			rapid.Custom(func(t *rapid.T) any {
				return MemoryCreated{Entities: genList(text).Draw(t, "entities"), Relations: genInt().Draw(t, "relations")}
			}),
		).Draw(t, "result").(Result)
	})
}

// benchStep is one typical step's worth of encoding: the head of a state in
// the tools phase (messages stored apart) whose turn holds one call and its
// 200-byte result, the tool request, its result, and two new messages.
type benchStep struct {
	head   State
	action RequestToolCalls
	result ToolResults
	msgs   []Message
}

func newBenchStep() benchStep {
	call := ToolCall{ID: "call_7f3a9c", Name: "search", Args: json.RawMessage(`{"query":"cbor canonical encoding"}`)}
	result := ToolResult{CallID: call.ID, Output: strings.Repeat("x", 200), Sources: []string{"https://example.test/cbor"}}
	return benchStep{
		head: State{
			Version: StateVersion,
			Request: Request{Input: "How does CBOR core deterministic encoding order map keys?"},
			Phase:   PhaseTools,
			Pending: &Pending{Kind: PendingTools, CallIDs: []string{call.ID}},
			Turn:    &Turn{Calls: []ToolCall{call}, Results: []ToolResult{result}, Native: true},
			Counters: Counters{Steps: 7, ModelCalls: 3, PromptTokens: 1834, CompletionTokens: 212, Bytes: 9321,
				LastCall: "search:3f1c0a9e"},
			ToolsUsed: []string{"search"},
		},
		action: RequestToolCalls{Calls: []ToolCall{call}, Parallel: true},
		result: ToolResults{Results: []ToolResult{result}},
		msgs: []Message{
			{Role: RoleAssistant, Content: "Let me look that up.", Calls: []ToolCall{call}},
			{Role: RoleTool, Content: result.Output, CallID: call.ID, Name: call.Name},
		},
	}
}

// BenchmarkEncodeFast compares the library with the fast paths on a typical
// step, whole and by part. Action and result are interface values, as Step
// returns them and the shell passes them in.
func BenchmarkEncodeFast(b *testing.B) {
	s := newBenchStep()
	var action Action = s.action
	var result Result = s.result
	library := func(dst []byte) []byte {
		st, _ := wire.EncMode().Marshal(s.head)
		a, _ := libraryEnvelope("tools", action)
		r, _ := libraryEnvelope("tool_results", result)
		for _, m := range s.msgs {
			enc, _ := wire.EncMode().Marshal(m)
			dst = append(dst, enc...)
		}
		return append(append(append(dst, st...), a...), r...)
	}
	fast := func(dst []byte) []byte {
		st, _ := EncodeState(s.head)
		a, _ := EncodeAction(action)
		r, _ := EncodeResult(result)
		for _, m := range s.msgs {
			dst = AppendMessage(dst, m)
		}
		return append(append(append(dst, st...), a...), r...)
	}
	if !bytes.Equal(library(nil), fast(nil)) {
		b.Fatal("library and fast encodings of the step differ")
	}
	parts := []struct {
		name          string
		library, fast func(dst []byte) []byte
	}{
		{"step", library, fast},
		{"state", func(dst []byte) []byte { b, _ := wire.EncMode().Marshal(s.head); return b },
			func(dst []byte) []byte { b, _ := EncodeState(s.head); return b }},
		{"action", func(dst []byte) []byte { b, _ := libraryEnvelope("tools", action); return b },
			func(dst []byte) []byte { b, _ := EncodeAction(action); return b }},
		{"result", func(dst []byte) []byte { b, _ := libraryEnvelope("tool_results", result); return b },
			func(dst []byte) []byte { b, _ := EncodeResult(result); return b }},
		{"messages", func(dst []byte) []byte {
			for _, m := range s.msgs {
				enc, _ := wire.EncMode().Marshal(m)
				dst = append(dst, enc...)
			}
			return dst
		}, func(dst []byte) []byte {
			for _, m := range s.msgs {
				dst = AppendMessage(dst, m)
			}
			return dst
		}},
	}
	for _, p := range parts {
		for _, impl := range []struct {
			name string
			f    func([]byte) []byte
		}{{"library", p.library}, {"fast", p.fast}} {
			b.Run(p.name+"/"+impl.name, func(b *testing.B) {
				dst := make([]byte, 0, 4096)
				b.ReportAllocs()
				for b.Loop() {
					dst = impl.f(dst[:0])
				}
			})
		}
	}
}
