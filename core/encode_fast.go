package core

import (
	"encoding/binary"
	"math"
)

// Hand-written encoders for the types on the checkpoint path. Each appends
// exactly the bytes encMode.Marshal gives for its value, without reflection.
// The library's rules under CoreDetEncOptions, as they apply to these types:
//
//   - A struct is a map of its fields that are not omitted. Every keyasint
//     key here is below 24, so each key is one byte and keys go in ascending
//     order; a struct has fewer than 24 fields, so its map head is one byte.
//   - omitempty drops "", 0, false, a nil pointer, a nil or empty slice, and
//     a struct whose fields are all omitempty and all empty (Usage{}).
//   - A nil slice that is not omitempty is null (0xf6); an empty one is an
//     empty array (0x80) or byte string (0x40).
//   - json.RawMessage is a byte string; strings are text strings, written
//     as they are (invalid UTF-8 included).
//   - Every head (integers, lengths) takes its shortest form.
//
// A type without an encoder here goes through encMode.Marshal. The tests in
// encode_fast_test.go compare every encoder with the library and fail when a
// struct gains a field its encoder does not know.

// CBOR major types, shifted into the initial byte.
const (
	majorUint  byte = 0 << 5
	majorNeg   byte = 1 << 5
	majorBytes byte = 2 << 5
	majorText  byte = 3 << 5
	majorArray byte = 4 << 5
	majorMap   byte = 5 << 5

	cborFalse byte = 0xf4
	cborTrue  byte = 0xf5
	cborNull  byte = 0xf6
)

// appendHead appends the head of an item of the major type with argument n
// (a length, a count or an integer's value) in its shortest form.
func appendHead(dst []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(dst, major|byte(n))
	case n <= math.MaxUint8:
		return append(dst, major|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, major|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, major|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, major|27), n)
}

func appendText(dst []byte, s string) []byte {
	return append(appendHead(dst, majorText, uint64(len(s))), s...)
}

// appendBytes writes a byte string; nil is null, as the library writes it.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, cborNull)
	}
	return append(appendHead(dst, majorBytes, uint64(len(b))), b...)
}

func appendInt(dst []byte, i int) []byte { return appendInt64(dst, int64(i)) }

func appendInt64(dst []byte, i int64) []byte {
	if i < 0 {
		return appendHead(dst, majorNeg, uint64(-1-i))
	}
	return appendHead(dst, majorUint, uint64(i))
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, cborTrue)
	}
	return append(dst, cborFalse)
}

// appendList writes an array of list's items; a nil list is null.
func appendList[T any](dst []byte, list []T, item func([]byte, *T) []byte) []byte {
	if list == nil {
		return append(dst, cborNull)
	}
	dst = appendHead(dst, majorArray, uint64(len(list)))
	for i := range list {
		dst = item(dst, &list[i])
	}
	return dst
}

// appendStrings writes an array of text strings; a nil slice is null.
func appendStrings(dst []byte, list []string) []byte {
	if list == nil {
		return append(dst, cborNull)
	}
	dst = appendHead(dst, majorArray, uint64(len(list)))
	for _, s := range list {
		dst = appendText(dst, s)
	}
	return dst
}

// fields writes the map of a struct's fields. Which fields are omitted is
// only known as they are written, so open reserves the one-byte head, key
// counts each field it writes, and close patches the count into the head.
type fields struct {
	head int // offset of the head in dst
	n    byte
}

func (f *fields) open(dst []byte) []byte {
	f.head, f.n = len(dst), 0
	return append(dst, majorMap)
}

// key appends an integer key (keyasint, below 24).
func (f *fields) key(dst []byte, k byte) []byte {
	f.n++
	return append(dst, majorUint|k)
}

// name appends a text key (a field without a cbor tag).
func (f *fields) name(dst []byte, s string) []byte {
	f.n++
	return appendText(dst, s)
}

func (f *fields) close(dst []byte) []byte {
	dst[f.head] = majorMap | f.n
	return dst
}

func appendMessage(dst []byte, m *Message) []byte {
	var f fields
	dst = f.open(dst)
	if m.Role != "" {
		dst = appendText(f.key(dst, 1), string(m.Role))
	}
	if m.Content != "" {
		dst = appendText(f.key(dst, 2), m.Content)
	}
	if len(m.Calls) > 0 {
		dst = appendList(f.key(dst, 3), m.Calls, appendToolCall)
	}
	if m.CallID != "" {
		dst = appendText(f.key(dst, 4), m.CallID)
	}
	if m.Name != "" {
		dst = appendText(f.key(dst, 5), m.Name)
	}
	if m.IsError {
		dst = appendBool(f.key(dst, 6), true)
	}
	if len(m.Attachments) > 0 {
		dst = appendList(f.key(dst, 7), m.Attachments, appendAttachment)
	}
	if m.Opaque != nil {
		dst = appendOpaque(f.key(dst, 8), m.Opaque)
	}
	return f.close(dst)
}

func appendOpaque(dst []byte, o *Opaque) []byte {
	var f fields
	dst = f.open(dst)
	if o.Provider != "" {
		dst = appendText(f.key(dst, 1), o.Provider)
	}
	if len(o.Data) > 0 {
		dst = appendBytes(f.key(dst, 2), o.Data)
	}
	return f.close(dst)
}

func appendToolCall(dst []byte, c *ToolCall) []byte {
	var f fields
	dst = f.open(dst)
	if c.ID != "" {
		dst = appendText(f.key(dst, 1), c.ID)
	}
	if c.Name != "" {
		dst = appendText(f.key(dst, 2), c.Name)
	}
	if len(c.Args) > 0 {
		dst = appendBytes(f.key(dst, 3), c.Args)
	}
	if c.Raw != "" {
		dst = appendText(f.key(dst, 4), c.Raw)
	}
	return f.close(dst)
}

func appendToolResult(dst []byte, r *ToolResult) []byte {
	var f fields
	dst = f.open(dst)
	if r.CallID != "" {
		dst = appendText(f.key(dst, 1), r.CallID)
	}
	if r.Output != "" {
		dst = appendText(f.key(dst, 2), r.Output)
	}
	if r.Error != "" {
		dst = appendText(f.key(dst, 3), r.Error)
	}
	if len(r.Sources) > 0 {
		dst = appendStrings(f.key(dst, 4), r.Sources)
	}
	if len(r.Attachments) > 0 {
		dst = appendList(f.key(dst, 5), r.Attachments, appendAttachment)
	}
	if r.Cached {
		dst = appendBool(f.key(dst, 6), true)
	}
	return f.close(dst)
}

func appendAttachment(dst []byte, a *Attachment) []byte {
	var f fields
	dst = f.open(dst)
	if a.MIME != "" {
		dst = appendText(f.key(dst, 1), a.MIME)
	}
	if len(a.Data) > 0 {
		dst = appendBytes(f.key(dst, 2), a.Data)
	}
	return f.close(dst)
}

func appendState(dst []byte, st *State) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendInt(f.key(dst, 1), st.Version)
	dst = appendRequest(f.key(dst, 2), &st.Request)
	dst = appendText(f.key(dst, 3), string(st.Phase))
	if len(st.Messages) > 0 {
		dst = appendList(f.key(dst, 4), st.Messages, appendMessage)
	}
	if st.Pending != nil {
		dst = appendPending(f.key(dst, 5), st.Pending)
	}
	if st.Turn != nil {
		dst = appendTurn(f.key(dst, 6), st.Turn)
	}
	dst = appendCounters(f.key(dst, 7), &st.Counters)
	if len(st.ToolsUsed) > 0 {
		dst = appendStrings(f.key(dst, 8), st.ToolsUsed)
	}
	if len(st.Sources) > 0 {
		dst = appendStrings(f.key(dst, 9), st.Sources)
	}
	if st.Answer != "" {
		dst = appendText(f.key(dst, 10), st.Answer)
	}
	if st.Failure != nil {
		dst = appendFailure(f.key(dst, 11), st.Failure)
	}
	if st.Escalation != "" {
		dst = appendText(f.key(dst, 12), st.Escalation)
	}
	if st.Recent != nil {
		dst = appendCallLog(f.key(dst, 13), st.Recent)
	}
	return f.close(dst)
}

func appendRequest(dst []byte, r *Request) []byte {
	var f fields
	dst = f.open(dst)
	if r.Input != "" {
		dst = appendText(f.key(dst, 1), r.Input)
	}
	return f.close(dst)
}

func appendPending(dst []byte, p *Pending) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendText(f.key(dst, 1), string(p.Kind))
	if p.Role != "" {
		dst = appendText(f.key(dst, 2), string(p.Role))
	}
	if len(p.CallIDs) > 0 {
		dst = appendStrings(f.key(dst, 3), p.CallIDs)
	}
	return f.close(dst)
}

func appendTurn(dst []byte, t *Turn) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendList(f.key(dst, 1), t.Calls, appendToolCall)
	dst = appendList(f.key(dst, 2), t.Results, appendToolResult)
	if t.Stopped {
		dst = appendBool(f.key(dst, 3), true)
	}
	if t.Native {
		dst = appendBool(f.key(dst, 4), true)
	}
	if t.Program != nil {
		dst = appendProgram(f.key(dst, 5), t.Program)
	}
	return f.close(dst)
}

func appendProgram(dst []byte, p *Program) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendInt(f.key(dst, 1), p.Message)
	if p.Step != 0 {
		dst = appendInt(f.key(dst, 2), p.Step)
	}
	return f.close(dst)
}

func appendCounters(dst []byte, c *Counters) []byte {
	var f fields
	dst = f.open(dst)
	for i, n := range [...]int{c.Steps, c.ModelCalls, c.Corrections, c.Escalations, c.Repeats, c.PromptTokens, c.CompletionTokens, c.Bytes} {
		if n != 0 {
			dst = appendInt(f.key(dst, byte(i+1)), n)
		}
	}
	if c.LastCall != "" {
		dst = appendText(f.key(dst, 9), c.LastCall)
	}
	if c.LowQuality != 0 {
		dst = appendInt(f.key(dst, 10), c.LowQuality)
	}
	if c.ToolCalls != 0 {
		dst = appendInt(f.key(dst, 11), c.ToolCalls)
	}
	if c.Cost != 0 {
		dst = appendInt64(f.key(dst, 12), c.Cost)
	}
	return f.close(dst)
}

func appendCallLog(dst []byte, l *CallLog) []byte {
	var f fields
	dst = f.open(dst)
	if len(l.Calls) > 0 {
		dst = appendStrings(f.key(dst, 1), l.Calls)
	}
	if len(l.Outcomes) > 0 {
		dst = appendStrings(f.key(dst, 2), l.Outcomes)
	}
	if l.Stale != 0 {
		dst = appendInt(f.key(dst, 3), l.Stale)
	}
	if l.Warned {
		dst = appendBool(f.key(dst, 4), true)
	}
	return f.close(dst)
}

func appendFailure(dst []byte, fl *Failure) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendText(f.key(dst, 1), string(fl.Code))
	dst = appendText(f.key(dst, 2), fl.Reason)
	return f.close(dst)
}

// Actions. Their State field is cbor:"-": never written.

func appendComplete(dst []byte, a *Complete) []byte {
	var f fields
	dst = f.open(dst)
	if a.Answer != "" {
		dst = appendText(f.key(dst, 1), a.Answer)
	}
	if len(a.ToolsUsed) > 0 {
		dst = appendStrings(f.key(dst, 2), a.ToolsUsed)
	}
	if len(a.Sources) > 0 {
		dst = appendStrings(f.key(dst, 3), a.Sources)
	}
	return f.close(dst)
}

func appendFail(dst []byte, a *Fail) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendText(f.key(dst, 1), string(a.Code))
	dst = appendText(f.key(dst, 2), a.Reason)
	return f.close(dst)
}

func appendRequestModelCall(dst []byte, a *RequestModelCall) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendText(f.key(dst, 1), string(a.Role))
	if len(a.Messages) > 0 {
		dst = appendList(f.key(dst, 2), a.Messages, appendMessage)
	}
	if len(a.Tools) > 0 {
		dst = appendList(f.key(dst, 3), a.Tools, appendTool)
	}
	return f.close(dst)
}

// appendTool writes a Tool, which has no cbor tags: the library keys it by
// its json names (honouring their omitempty) as text keys, ordered bytewise
// by their encodings, that is shorter names first, then alphabetically.
func appendTool(dst []byte, t *Tool) []byte {
	var f fields
	dst = f.open(dst)
	if t.Mode != "" {
		dst = appendText(f.name(dst, "mode"), string(t.Mode))
	}
	dst = appendText(f.name(dst, "name"), t.Name)
	if t.Idempotent {
		dst = appendBool(f.name(dst, "idempotent"), true)
	}
	if len(t.Parameters) > 0 {
		dst = appendBytes(f.name(dst, "parameters"), t.Parameters)
	}
	if t.Description != "" {
		dst = appendText(f.name(dst, "description"), t.Description)
	}
	if t.MaxResultBytes != 0 {
		dst = appendInt(f.name(dst, "max_result_bytes"), t.MaxResultBytes)
	}
	return f.close(dst)
}

func appendRequestToolCalls(dst []byte, a *RequestToolCalls) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendList(f.key(dst, 1), a.Calls, appendToolCall)
	if a.Parallel {
		dst = appendBool(f.key(dst, 2), true)
	}
	if a.StopOnError {
		dst = appendBool(f.key(dst, 3), true)
	}
	return f.close(dst)
}

func appendRequestExternalToolCalls(dst []byte, a *RequestExternalToolCalls) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendList(f.key(dst, 1), a.Calls, appendToolCall)
	return f.close(dst)
}

// Results.

func appendModelReply(dst []byte, r *ModelReply) []byte {
	var f fields
	dst = f.open(dst)
	if r.Text != "" {
		dst = appendText(f.key(dst, 1), r.Text)
	}
	if len(r.Calls) > 0 {
		dst = appendList(f.key(dst, 2), r.Calls, appendNativeCall)
	}
	if r.FinishReason != "" {
		dst = appendText(f.key(dst, 3), r.FinishReason)
	}
	if r.Usage != (Usage{}) {
		dst = appendUsage(f.key(dst, 4), &r.Usage)
	}
	if r.Error != "" {
		dst = appendText(f.key(dst, 5), r.Error)
	}
	if r.Opaque != nil {
		dst = appendOpaque(f.key(dst, 6), r.Opaque)
	}
	return f.close(dst)
}

func appendNativeCall(dst []byte, c *NativeCall) []byte {
	var f fields
	dst = f.open(dst)
	if c.ID != "" {
		dst = appendText(f.key(dst, 1), c.ID)
	}
	if c.Name != "" {
		dst = appendText(f.key(dst, 2), c.Name)
	}
	if c.Arguments != "" {
		dst = appendText(f.key(dst, 3), c.Arguments)
	}
	return f.close(dst)
}

func appendUsage(dst []byte, u *Usage) []byte {
	var f fields
	dst = f.open(dst)
	if u.PromptTokens != 0 {
		dst = appendInt(f.key(dst, 1), u.PromptTokens)
	}
	if u.CompletionTokens != 0 {
		dst = appendInt(f.key(dst, 2), u.CompletionTokens)
	}
	if u.CachedTokens != 0 {
		dst = appendInt(f.key(dst, 3), u.CachedTokens)
	}
	if u.ReasoningTokens != 0 {
		dst = appendInt(f.key(dst, 4), u.ReasoningTokens)
	}
	return f.close(dst)
}

func appendToolResults(dst []byte, r *ToolResults) []byte {
	var f fields
	dst = f.open(dst)
	dst = appendList(f.key(dst, 1), r.Results, appendToolResult)
	return f.close(dst)
}

// appendEnvelope writes an envelope's head and kind; the body's encoding,
// appended next, completes it (the body is a cbor.RawMessage, embedded as is).
func appendEnvelope(dst []byte, kind string) []byte {
	dst = appendText(append(dst, majorMap|2, majorUint|1), kind)
	return append(dst, majorUint|2)
}

// encodeActionFast appends a inside an envelope of kind to dst, and reports
// false when a has no encoder here.
func encodeActionFast(dst []byte, kind string, a Action) ([]byte, bool) {
	if m, ok := a.(RequestModelCall); ok && m.Role == Primary {
		m.Messages = nil // the state's own: DecodeAction restores them
		a = m
	}
	size, ok := actionFieldsSize(a)
	if !ok {
		return dst, false
	}
	dst = startEnvelope(dst, kind, size)
	switch a := a.(type) {
	case Complete:
		return appendComplete(dst, &a), true
	case Fail:
		return appendFail(dst, &a), true
	case RequestModelCall:
		return appendRequestModelCall(dst, &a), true
	case RequestToolCalls:
		return appendRequestToolCalls(dst, &a), true
	case RequestExternalToolCalls:
		return appendRequestExternalToolCalls(dst, &a), true
	}
	return dst, false
}

// actionFieldsSize is the size estimate of a's fields, for the actions
// with a fast path (false for the others).
func actionFieldsSize(a Action) (int, bool) {
	switch a := a.(type) {
	case Complete:
		return textSize(a.Answer) + stringsSize(a.ToolsUsed) + stringsSize(a.Sources), true
	case Fail:
		return textSize(string(a.Code)) + textSize(a.Reason), true
	case RequestModelCall:
		return textSize(string(a.Role)) + messagesSize(a.Messages) + toolsSize(a.Tools), true
	case RequestToolCalls:
		return callsSize(a.Calls) + 2*boolField, true
	case RequestExternalToolCalls:
		return callsSize(a.Calls), true
	}
	return 0, false
}

// encodeResultFast appends r inside an envelope of kind to dst, and reports
// false when r has no encoder here.
func encodeResultFast(dst []byte, kind string, r Result) ([]byte, bool) {
	size, ok := resultFieldsSize(r)
	if !ok {
		return dst, false
	}
	dst = startEnvelope(dst, kind, size)
	switch r := r.(type) {
	case ModelReply:
		return appendModelReply(dst, &r), true
	case ToolResults:
		return appendToolResults(dst, &r), true
	}
	return dst, false
}

// resultFieldsSize is the size estimate of r's fields, for the results
// with a fast path (false for the others).
func resultFieldsSize(r Result) (int, bool) {
	switch r := r.(type) {
	case ModelReply:
		usage := 2 + 4*intField
		return textSize(r.Text) + nativeCallsSize(r.Calls) + textSize(r.FinishReason) + usage + textSize(r.Error) + opaqueSize(r.Opaque), true
	case ToolResults:
		return resultsSize(r.Results), true
	}
	return 0, false
}

// startEnvelope starts an envelope of kind on dst, grown to hold it and a
// body whose fields take about fieldsSize bytes.
func startEnvelope(dst []byte, kind string, fieldsSize int) []byte {
	return appendEnvelope(grow(dst, envelopeSize(kind, fieldsSize)), kind)
}

// envelopeSize is the size estimate of an envelope of kind around fields
// of fieldsSize bytes.
func envelopeSize(kind string, fieldsSize int) int {
	const heads = 1 + 1 + 1 // the envelope's map head, key 2, the body's map head
	return heads + textSize(kind) + fieldsSize
}
