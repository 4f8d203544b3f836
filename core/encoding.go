package core

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"

	"github.com/stepwise-agent/stepwise/core/internal/wire"
)

// Errors returned by the decoders.
var (
	// ErrCorrupt: the bytes are not a valid encoding of the value.
	ErrCorrupt = errors.New("corrupt encoding")
	// ErrNewerVersion: the state was written by a newer stepwise.
	ErrNewerVersion = errors.New("state written by a newer version")
)

// EncodeState encodes a state with CBOR Core Deterministic Encoding: the same
// state always gives the same bytes, the bytes wire.EncMode().Marshal gives
// (see encode_fast.go). It never fails; the error is kept for callers.
func EncodeState(st State) ([]byte, error) {
	return AppendState(nil, st), nil
}

// AppendState appends EncodeState's bytes for st to dst.
func AppendState(dst []byte, st State) []byte {
	return appendState(wire.Grow(dst, stateSize(&st)), &st)
}

// DecodeState decodes a state written by EncodeState. It fails with
// ErrNewerVersion for a state from a newer format and ErrCorrupt otherwise.
func DecodeState(b []byte) (State, error) {
	var v struct {
		Version int `cbor:"1,keyasint"`
	}
	if err := wire.LenientDecMode().Unmarshal(b, &v); err != nil {
		return State{}, fmt.Errorf("%w: state: %v", ErrCorrupt, err)
	}
	if v.Version > StateVersion {
		return State{}, fmt.Errorf("%w: version %d, this build reads up to %d", ErrNewerVersion, v.Version, StateVersion)
	}
	var st State
	if err := wire.DecMode().Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("%w: state: %v", ErrCorrupt, err)
	}
	if err := checkState(st); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return st, nil
}

// CBORModes returns the encoding mode (Core Deterministic Encoding) and the
// strict decoding mode the core uses, for a store that encodes parts of a
// state (messages, tool results) on its own and must match the core's bytes.
func CBORModes() (cbor.EncMode, cbor.DecMode) { return wire.EncMode(), wire.DecMode() }

// EncodeMessages encodes part of a message log exactly as EncodeState
// encodes it inside a state, for comparing or storing a log piece by piece.
// A nil log is CBOR null, an empty one an empty array. It never fails.
func EncodeMessages(msgs []Message) ([]byte, error) {
	if msgs == nil {
		return []byte{wire.Null}, nil
	}
	return wire.AppendList(make([]byte, 0, messagesSize(msgs)), msgs, appendMessage), nil
}

// AppendMessage appends the encoding of m to dst: the bytes wire.EncMode().Marshal
// gives for m, which are m's bytes inside an encoded state.
func AppendMessage(dst []byte, m Message) []byte {
	return appendMessage(dst, &m)
}

// AppendTools appends the encoding of a non-empty tool list to dst: a CBOR array of
// the tools, each as it is encoded inside a model call's action, so that a
// store can keep a model call's tools once and the action without them.
func AppendTools(dst []byte, tools []Tool) []byte {
	return wire.AppendList(dst, tools, appendTool)
}

// DecodeTools decodes what AppendTools wrote, strictly (ErrCorrupt).
func DecodeTools(b []byte) ([]Tool, error) {
	var tools []Tool
	if err := wire.DecMode().Unmarshal(b, &tools); err != nil {
		return nil, fmt.Errorf("%w: tools: %v", ErrCorrupt, err)
	}
	return tools, nil
}

// ActionKind names an action's kind, as used in encodings and logs.
func ActionKind(a Action) string {
	switch a.(type) {
	case Complete:
		return "complete"
	case Fail:
		return "fail"
	case RequestModelCall:
		return "model"
	case RequestToolCalls:
		return "tools"
	case RequestExternalToolCalls:
		return "external"
	case RequestMemorySearch:
		return "memory_search"
	case RequestMemoryCreate:
		return "memory_create"
	case RequestMemoryTraverse:
		return "memory_traverse"
	}
	return ""
}

// EncodeAction encodes an action without its continuation state (which is
// stored on its own). A RequestModelCall is stored without its messages,
// which are the state's own; DecodeAction restores them from a state.
func EncodeAction(a Action) ([]byte, error) { return AppendAction(nil, a) }

// AppendAction appends EncodeAction's bytes for a to dst. On error dst is
// returned as it was.
func AppendAction(dst []byte, a Action) ([]byte, error) {
	kind := ActionKind(a)
	if kind == "" {
		return dst, fmt.Errorf("encode action: unknown action %T", a)
	}
	// Every action with a fast path takes it, a RequestModelCall included:
	// that path drops a primary call's messages.
	if b, ok := encodeActionFast(dst, kind, a); ok {
		return b, nil
	}
	body, err := wire.EncMode().Marshal(a)
	if err != nil {
		return dst, fmt.Errorf("encode %s action: %w", kind, err)
	}
	return wire.AppendEnveloped(dst, kind, body)
}

// DecodeAction decodes an action written by EncodeAction and attaches st as
// its continuation state (for a primary model call, its messages too).
func DecodeAction(b []byte, st State) (Action, error) {
	var env wire.Envelope
	if err := wire.DecMode().Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%w: action: %v", ErrCorrupt, err)
	}
	var a Action
	var err error
	switch env.Kind {
	case "complete":
		a, err = decodeInto[Complete](env.Body, func(v *Complete) {
			v.State = st
			if st.Structured {
				v.Output = json.RawMessage(v.Answer)
			}
		})
	case "fail":
		a, err = decodeInto[Fail](env.Body, func(v *Fail) { v.State = st })
	case "model":
		a, err = decodeInto[RequestModelCall](env.Body, func(v *RequestModelCall) {
			v.State = st
			switch {
			case st.Phase == PhaseCompact:
				v.Messages = compactMessages(st)
			case v.Role == Primary:
				v.Messages = contextView(st)
			}
		})
	case "tools":
		a, err = decodeInto[RequestToolCalls](env.Body, func(v *RequestToolCalls) { v.State = st })
	case "external":
		a, err = decodeInto[RequestExternalToolCalls](env.Body, func(v *RequestExternalToolCalls) { v.State = st })
	case "memory_search":
		a, err = decodeInto[RequestMemorySearch](env.Body, func(v *RequestMemorySearch) { v.State = st })
	case "memory_create":
		a, err = decodeInto[RequestMemoryCreate](env.Body, func(v *RequestMemoryCreate) { v.State = st })
	case "memory_traverse":
		a, err = decodeInto[RequestMemoryTraverse](env.Body, func(v *RequestMemoryTraverse) { v.State = st })
	default:
		return nil, fmt.Errorf("%w: unknown action kind %q", ErrCorrupt, env.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s action: %v", ErrCorrupt, env.Kind, err)
	}
	return a, nil
}

// ResultKind names a result's kind, as used in encodings and logs.
func ResultKind(r Result) string {
	switch r.(type) {
	case ModelReply:
		return "reply"
	case ToolResults:
		return "tool_results"
	case MemoryHits:
		return "memory_hits"
	case MemoryCreated:
		return "memory_created"
	case MemoryTraversed:
		return "memory_traversed"
	case UserMessage:
		return "user_message"
	case Cancelled:
		return "cancelled"
	}
	return ""
}

// EncodeResult encodes a result deterministically, in an envelope naming its
// kind, as EncodeAction does.
func EncodeResult(r Result) ([]byte, error) { return AppendResult(nil, r) }

// AppendResult appends EncodeResult's bytes for r to dst. On error dst is
// returned as it was.
func AppendResult(dst []byte, r Result) ([]byte, error) {
	kind := ResultKind(r)
	if kind == "" {
		return dst, fmt.Errorf("encode result: unknown result %T", r)
	}
	if b, ok := encodeResultFast(dst, kind, r); ok {
		return b, nil
	}
	body, err := wire.EncMode().Marshal(r)
	if err != nil {
		return dst, fmt.Errorf("encode %s result: %w", kind, err)
	}
	return wire.AppendEnveloped(dst, kind, body)
}

// DecodeResult decodes a result written by EncodeResult.
func DecodeResult(b []byte) (Result, error) {
	var env wire.Envelope
	if err := wire.DecMode().Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("%w: result: %v", ErrCorrupt, err)
	}
	var r Result
	var err error
	switch env.Kind {
	case "reply":
		r, err = decodeInto[ModelReply](env.Body, nil)
	case "tool_results":
		r, err = decodeInto[ToolResults](env.Body, nil)
	case "memory_hits":
		r, err = decodeInto[MemoryHits](env.Body, nil)
	case "memory_created":
		r, err = decodeInto[MemoryCreated](env.Body, nil)
	case "memory_traversed":
		r, err = decodeInto[MemoryTraversed](env.Body, nil)
	case "user_message":
		r, err = decodeInto[UserMessage](env.Body, nil)
	case "cancelled":
		r, err = decodeInto[Cancelled](env.Body, nil)
	default:
		return nil, fmt.Errorf("%w: unknown result kind %q", ErrCorrupt, env.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s result: %v", ErrCorrupt, env.Kind, err)
	}
	return r, nil
}

func decodeInto[T any](b []byte, fill func(*T)) (T, error) {
	var v T
	if err := wire.DecMode().Unmarshal(b, &v); err != nil {
		return v, err
	}
	if fill != nil {
		fill(&v)
	}
	return v, nil
}

// ConfigHash identifies an agent config: a SHA-256 over its canonical JSON.
func ConfigHash(cfg Config) string {
	b, err := json.Marshal(cfg) // struct fields in declaration order: stable
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
