package core

import "github.com/stepwise-agent/stepwise/core/internal/wire"

// Hand-written encoders for the core's types on the checkpoint path, built
// on wire's primitives. Each appends exactly the bytes wire.EncMode()
// Marshal gives for its value, without reflection. The library's rules
// under CoreDetEncOptions, as they apply to these types:
//
//   - A struct is a map of its fields that are not omitted. Every keyasint
//     key here is below 24, so each key is one byte and keys go in ascending
//     order; a struct has fewer than 24 fields, so its map head is one byte
//     (wire.Fields).
//   - omitempty drops "", 0, false, a nil pointer, a nil or empty slice, and
//     a struct whose fields are all omitempty and all empty (Usage{}).
//   - A nil slice that is not omitempty is null (0xf6); an empty one is an
//     empty array (0x80) or byte string (0x40).
//   - json.RawMessage is a byte string; strings are text strings, written
//     as they are (invalid UTF-8 included).
//   - Every head (integers, lengths) takes its shortest form.
//
// A type without an encoder here goes through wire.EncMode().Marshal. The
// tests in encode_fast_test.go compare every encoder with the library and
// fail when a struct gains a field its encoder does not know.

func appendMessage(dst []byte, m *Message) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if m.Role != "" {
		dst = wire.AppendText(f.Key(dst, 1), string(m.Role))
	}
	if m.Content != "" {
		dst = wire.AppendText(f.Key(dst, 2), m.Content)
	}
	if len(m.Calls) > 0 {
		dst = wire.AppendList(f.Key(dst, 3), m.Calls, appendToolCall)
	}
	if m.CallID != "" {
		dst = wire.AppendText(f.Key(dst, 4), m.CallID)
	}
	if m.Name != "" {
		dst = wire.AppendText(f.Key(dst, 5), m.Name)
	}
	if m.IsError {
		dst = wire.AppendBool(f.Key(dst, 6), true)
	}
	if len(m.Attachments) > 0 {
		dst = wire.AppendList(f.Key(dst, 7), m.Attachments, appendAttachment)
	}
	if m.Opaque != nil {
		dst = appendOpaque(f.Key(dst, 8), m.Opaque)
	}
	return f.Close(dst)
}

func appendOpaque(dst []byte, o *Opaque) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if o.Provider != "" {
		dst = wire.AppendText(f.Key(dst, 1), o.Provider)
	}
	if len(o.Data) > 0 {
		dst = wire.AppendBytes(f.Key(dst, 2), o.Data)
	}
	return f.Close(dst)
}

func appendToolCall(dst []byte, c *ToolCall) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if c.ID != "" {
		dst = wire.AppendText(f.Key(dst, 1), c.ID)
	}
	if c.Name != "" {
		dst = wire.AppendText(f.Key(dst, 2), c.Name)
	}
	if len(c.Args) > 0 {
		dst = wire.AppendBytes(f.Key(dst, 3), c.Args)
	}
	if c.Raw != "" {
		dst = wire.AppendText(f.Key(dst, 4), c.Raw)
	}
	return f.Close(dst)
}

func appendToolResult(dst []byte, r *ToolResult) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if r.CallID != "" {
		dst = wire.AppendText(f.Key(dst, 1), r.CallID)
	}
	if r.Output != "" {
		dst = wire.AppendText(f.Key(dst, 2), r.Output)
	}
	if r.Error != "" {
		dst = wire.AppendText(f.Key(dst, 3), r.Error)
	}
	if len(r.Sources) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 4), r.Sources)
	}
	if len(r.Attachments) > 0 {
		dst = wire.AppendList(f.Key(dst, 5), r.Attachments, appendAttachment)
	}
	if r.Cached {
		dst = wire.AppendBool(f.Key(dst, 6), true)
	}
	if r.Spent != nil {
		dst = appendSpent(f.Key(dst, 7), r.Spent)
	}
	return f.Close(dst)
}

func appendSpent(dst []byte, s *Spent) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if s.PromptTokens != 0 {
		dst = wire.AppendInt(f.Key(dst, 1), s.PromptTokens)
	}
	if s.CompletionTokens != 0 {
		dst = wire.AppendInt(f.Key(dst, 2), s.CompletionTokens)
	}
	if s.Cost != 0 {
		dst = wire.AppendInt64(f.Key(dst, 3), s.Cost)
	}
	if s.ToolCalls != 0 {
		dst = wire.AppendInt(f.Key(dst, 4), s.ToolCalls)
	}
	return f.Close(dst)
}

func appendAttachment(dst []byte, a *Attachment) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if a.MIME != "" {
		dst = wire.AppendText(f.Key(dst, 1), a.MIME)
	}
	if len(a.Data) > 0 {
		dst = wire.AppendBytes(f.Key(dst, 2), a.Data)
	}
	return f.Close(dst)
}

func appendState(dst []byte, st *State) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendInt(f.Key(dst, 1), st.Version)
	dst = appendRequest(f.Key(dst, 2), &st.Request)
	dst = wire.AppendText(f.Key(dst, 3), string(st.Phase))
	if len(st.Messages) > 0 {
		dst = wire.AppendList(f.Key(dst, 4), st.Messages, appendMessage)
	}
	if st.Pending != nil {
		dst = appendPending(f.Key(dst, 5), st.Pending)
	}
	if st.Turn != nil {
		dst = appendTurn(f.Key(dst, 6), st.Turn)
	}
	dst = appendCounters(f.Key(dst, 7), &st.Counters)
	if len(st.ToolsUsed) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 8), st.ToolsUsed)
	}
	if len(st.Sources) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 9), st.Sources)
	}
	if st.Answer != "" {
		dst = wire.AppendText(f.Key(dst, 10), st.Answer)
	}
	if st.Failure != nil {
		dst = appendFailure(f.Key(dst, 11), st.Failure)
	}
	if st.Escalation != "" {
		dst = wire.AppendText(f.Key(dst, 12), st.Escalation)
	}
	if st.Recent != nil {
		dst = appendCallLog(f.Key(dst, 13), st.Recent)
	}
	if len(st.ToolsOK) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 14), st.ToolsOK)
	}
	if st.Conv != nil {
		dst = appendConversation(f.Key(dst, 15), st.Conv)
	}
	if st.Ctx != nil {
		dst = appendContextState(f.Key(dst, 16), st.Ctx)
	}
	if st.Structured {
		dst = wire.AppendBool(f.Key(dst, 17), true)
	}
	return f.Close(dst)
}

func appendContextState(dst []byte, c *ContextState) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	for i, n := range [...]int{c.Head, c.Summary, c.From, c.ElideBelow, c.Cap, c.Tokens, c.Counted, c.Prompt, c.PromptAt, c.Cut, c.Words, c.Limit} {
		if n != 0 {
			dst = wire.AppendInt(f.Key(dst, byte(i+1)), n)
		}
	}
	if c.Retried {
		dst = wire.AppendBool(f.Key(dst, 13), true)
	}
	if c.BytesPerToken != 0 {
		dst = wire.AppendInt(f.Key(dst, 14), c.BytesPerToken)
	}
	return f.Close(dst)
}

func appendConversation(dst []byte, c *Conversation) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if c.Turn != 0 {
		dst = wire.AppendInt(f.Key(dst, 1), c.Turn)
	}
	if c.Input != "" {
		dst = wire.AppendText(f.Key(dst, 2), c.Input)
	}
	if len(c.Queue) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 3), c.Queue)
	}
	if c.Base != (Counters{}) {
		dst = appendCounters(f.Key(dst, 4), &c.Base)
	}
	if c.At != 0 {
		dst = wire.AppendInt(f.Key(dst, 5), c.At)
	}
	return f.Close(dst)
}

func appendRequest(dst []byte, r *Request) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if r.Input != "" {
		dst = wire.AppendText(f.Key(dst, 1), r.Input)
	}
	if r.History != 0 {
		dst = wire.AppendInt(f.Key(dst, 2), r.History)
	}
	return f.Close(dst)
}

func appendPending(dst []byte, p *Pending) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendText(f.Key(dst, 1), string(p.Kind))
	if p.Role != "" {
		dst = wire.AppendText(f.Key(dst, 2), string(p.Role))
	}
	if len(p.CallIDs) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 3), p.CallIDs)
	}
	return f.Close(dst)
}

func appendTurn(dst []byte, t *Turn) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendList(f.Key(dst, 1), t.Calls, appendToolCall)
	dst = wire.AppendList(f.Key(dst, 2), t.Results, appendToolResult)
	if t.Stopped {
		dst = wire.AppendBool(f.Key(dst, 3), true)
	}
	if t.Native {
		dst = wire.AppendBool(f.Key(dst, 4), true)
	}
	if t.Program != nil {
		dst = appendProgram(f.Key(dst, 5), t.Program)
	}
	if t.Parse != nil {
		dst = appendParseMeta(f.Key(dst, 6), t.Parse)
	}
	return f.Close(dst)
}

func appendParseMeta(dst []byte, m *ParseMeta) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if m.Format != "" {
		dst = wire.AppendText(f.Key(dst, 1), string(m.Format))
	}
	if len(m.Spans) > 0 {
		dst = wire.AppendList(f.Key(dst, 2), m.Spans, appendSpan)
	}
	if len(m.Warnings) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 3), m.Warnings)
	}
	return f.Close(dst)
}

func appendSpan(dst []byte, sp *Span) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if sp.Start != 0 {
		dst = wire.AppendInt(f.Key(dst, 1), sp.Start)
	}
	if sp.End != 0 {
		dst = wire.AppendInt(f.Key(dst, 2), sp.End)
	}
	return f.Close(dst)
}

func appendProgram(dst []byte, p *Program) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendInt(f.Key(dst, 1), p.Message)
	if p.Step != 0 {
		dst = wire.AppendInt(f.Key(dst, 2), p.Step)
	}
	return f.Close(dst)
}

func appendCounters(dst []byte, c *Counters) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	for i, n := range [...]int{c.Steps, c.ModelCalls, c.Corrections, c.Escalations, c.Repeats, c.PromptTokens, c.CompletionTokens, c.Bytes} {
		if n != 0 {
			dst = wire.AppendInt(f.Key(dst, byte(i+1)), n)
		}
	}
	if c.LastCall != "" {
		dst = wire.AppendText(f.Key(dst, 9), c.LastCall)
	}
	if c.LowQuality != 0 {
		dst = wire.AppendInt(f.Key(dst, 10), c.LowQuality)
	}
	if c.ToolCalls != 0 {
		dst = wire.AppendInt(f.Key(dst, 11), c.ToolCalls)
	}
	if c.Cost != 0 {
		dst = wire.AppendInt64(f.Key(dst, 12), c.Cost)
	}
	if c.Compactions != 0 {
		dst = wire.AppendInt(f.Key(dst, 13), c.Compactions)
	}
	return f.Close(dst)
}

func appendCallLog(dst []byte, l *CallLog) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if len(l.Calls) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 1), l.Calls)
	}
	if len(l.Outcomes) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 2), l.Outcomes)
	}
	if l.Stale != 0 {
		dst = wire.AppendInt(f.Key(dst, 3), l.Stale)
	}
	if l.Warned {
		dst = wire.AppendBool(f.Key(dst, 4), true)
	}
	return f.Close(dst)
}

func appendFailure(dst []byte, fl *Failure) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendText(f.Key(dst, 1), string(fl.Code))
	dst = wire.AppendText(f.Key(dst, 2), fl.Reason)
	return f.Close(dst)
}

// Actions. Their State field is cbor:"-": never written.

func appendComplete(dst []byte, a *Complete) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if a.Answer != "" {
		dst = wire.AppendText(f.Key(dst, 1), a.Answer)
	}
	if len(a.ToolsUsed) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 2), a.ToolsUsed)
	}
	if len(a.Sources) > 0 {
		dst = wire.AppendStrings(f.Key(dst, 3), a.Sources)
	}
	return f.Close(dst)
}

func appendFail(dst []byte, a *Fail) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendText(f.Key(dst, 1), string(a.Code))
	dst = wire.AppendText(f.Key(dst, 2), a.Reason)
	return f.Close(dst)
}

func appendRequestModelCall(dst []byte, a *RequestModelCall) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendText(f.Key(dst, 1), string(a.Role))
	if len(a.Messages) > 0 {
		dst = wire.AppendList(f.Key(dst, 2), a.Messages, appendMessage)
	}
	if len(a.Tools) > 0 {
		dst = wire.AppendList(f.Key(dst, 3), a.Tools, appendTool)
	}
	return f.Close(dst)
}

// appendTool writes a Tool, which has no cbor tags: the library keys it by
// its json names (honouring their omitempty) as text keys, ordered bytewise
// by their encodings, that is shorter names first, then alphabetically.
func appendTool(dst []byte, t *Tool) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if t.Mode != "" {
		dst = wire.AppendText(f.Name(dst, "mode"), string(t.Mode))
	}
	dst = wire.AppendText(f.Name(dst, "name"), t.Name)
	if t.Idempotent {
		dst = wire.AppendBool(f.Name(dst, "idempotent"), true)
	}
	if len(t.Parameters) > 0 {
		dst = wire.AppendBytes(f.Name(dst, "parameters"), t.Parameters)
	}
	if t.Description != "" {
		dst = wire.AppendText(f.Name(dst, "description"), t.Description)
	}
	if t.MaxResultBytes != 0 {
		dst = wire.AppendInt(f.Name(dst, "max_result_bytes"), t.MaxResultBytes)
	}
	return f.Close(dst)
}

func appendRequestToolCalls(dst []byte, a *RequestToolCalls) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendList(f.Key(dst, 1), a.Calls, appendToolCall)
	if a.Parallel {
		dst = wire.AppendBool(f.Key(dst, 2), true)
	}
	if a.StopOnError {
		dst = wire.AppendBool(f.Key(dst, 3), true)
	}
	return f.Close(dst)
}

func appendRequestExternalToolCalls(dst []byte, a *RequestExternalToolCalls) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendList(f.Key(dst, 1), a.Calls, appendToolCall)
	return f.Close(dst)
}

// Results.

func appendModelReply(dst []byte, r *ModelReply) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if r.Text != "" {
		dst = wire.AppendText(f.Key(dst, 1), r.Text)
	}
	if len(r.Calls) > 0 {
		dst = wire.AppendList(f.Key(dst, 2), r.Calls, appendNativeCall)
	}
	if r.FinishReason != "" {
		dst = wire.AppendText(f.Key(dst, 3), r.FinishReason)
	}
	if r.Usage != (Usage{}) {
		dst = appendUsage(f.Key(dst, 4), &r.Usage)
	}
	if r.Error != "" {
		dst = wire.AppendText(f.Key(dst, 5), r.Error)
	}
	if r.Opaque != nil {
		dst = appendOpaque(f.Key(dst, 6), r.Opaque)
	}
	if r.Overflow {
		dst = wire.AppendBool(f.Key(dst, 7), true)
	}
	return f.Close(dst)
}

func appendNativeCall(dst []byte, c *NativeCall) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if c.ID != "" {
		dst = wire.AppendText(f.Key(dst, 1), c.ID)
	}
	if c.Name != "" {
		dst = wire.AppendText(f.Key(dst, 2), c.Name)
	}
	if c.Arguments != "" {
		dst = wire.AppendText(f.Key(dst, 3), c.Arguments)
	}
	return f.Close(dst)
}

func appendUsage(dst []byte, u *Usage) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	if u.PromptTokens != 0 {
		dst = wire.AppendInt(f.Key(dst, 1), u.PromptTokens)
	}
	if u.CompletionTokens != 0 {
		dst = wire.AppendInt(f.Key(dst, 2), u.CompletionTokens)
	}
	if u.CachedTokens != 0 {
		dst = wire.AppendInt(f.Key(dst, 3), u.CachedTokens)
	}
	if u.ReasoningTokens != 0 {
		dst = wire.AppendInt(f.Key(dst, 4), u.ReasoningTokens)
	}
	return f.Close(dst)
}

func appendToolResults(dst []byte, r *ToolResults) []byte {
	var f wire.Fields
	dst = f.Open(dst)
	dst = wire.AppendList(f.Key(dst, 1), r.Results, appendToolResult)
	return f.Close(dst)
}

// encodeActionFast appends a inside an envelope of kind to dst, and reports
// false when a has no encoder here.
func encodeActionFast(dst []byte, kind string, a Action) ([]byte, bool) {
	if m, ok := a.(RequestModelCall); ok && (m.Role == Primary || m.State.Phase == PhaseCompact) {
		m.Messages = nil // derived from the state: DecodeAction restores them
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

// actionFieldsSize is the size estimate of a's wire.Fields, for the actions
// with a fast path (false for the others).
func actionFieldsSize(a Action) (int, bool) {
	switch a := a.(type) {
	case Complete:
		return wire.TextSize(a.Answer) + wire.StringsSize(a.ToolsUsed) + wire.StringsSize(a.Sources), true
	case Fail:
		return wire.TextSize(string(a.Code)) + wire.TextSize(a.Reason), true
	case RequestModelCall:
		return wire.TextSize(string(a.Role)) + messagesSize(a.Messages) + toolsSize(a.Tools), true
	case RequestToolCalls:
		return callsSize(a.Calls) + 2*wire.BoolField, true
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

// resultFieldsSize is the size estimate of r's wire.Fields, for the results
// with a fast path (false for the others).
func resultFieldsSize(r Result) (int, bool) {
	switch r := r.(type) {
	case ModelReply:
		usage := 2 + 4*wire.IntField
		return wire.TextSize(r.Text) + nativeCallsSize(r.Calls) + wire.TextSize(r.FinishReason) + usage + wire.TextSize(r.Error) + opaqueSize(r.Opaque), true
	case ToolResults:
		return resultsSize(r.Results), true
	}
	return 0, false
}

// startEnvelope starts an envelope of kind on dst, grown to hold it and a
// body whose wire.Fields take about fieldsSize bytes.
func startEnvelope(dst []byte, kind string, fieldsSize int) []byte {
	return wire.AppendEnvelope(wire.Grow(dst, wire.EnvelopeSize(kind, fieldsSize)), kind)
}
