package core

import "github.com/stepwise-agent/stepwise/core/internal/wire"

// Size estimates of the core's types, so that encoding takes one
// allocation: upper bounds (TestEncodeAllocatesOnce checks it), built on
// wire's sizes.

// toolKeys is what Tool's text keys take beyond the one byte a key is
// counted as elsewhere, and its bool and int fields.
const toolKeys = 80

func messagesSize(msgs []Message) int {
	n := wire.ListField
	for i := range msgs {
		m := &msgs[i]
		n += 1 + wire.TextSize(string(m.Role)) + wire.TextSize(m.Content) + wire.TextSize(m.CallID) + wire.TextSize(m.Name) + wire.BoolField
		if len(m.Calls) > 0 {
			n += callsSize(m.Calls)
		}
		if len(m.Attachments) > 0 {
			n += attachmentsSize(m.Attachments)
		}
		n += opaqueSize(m.Opaque)
	}
	return n
}

func attachmentsSize(list []Attachment) int {
	n := wire.ListField
	for i := range list {
		n += 1 + wire.TextSize(list[i].MIME) + wire.FieldSize(len(list[i].Data))
	}
	return n
}

// opaqueSize is the size of an Opaque field (0 when nil).
func opaqueSize(o *Opaque) int {
	if o == nil {
		return 0
	}
	return 2 + wire.TextSize(o.Provider) + wire.FieldSize(len(o.Data))
}

func callsSize(calls []ToolCall) int {
	n := wire.ListField
	for i := range calls {
		c := &calls[i]
		n += 1 + wire.TextSize(c.ID) + wire.TextSize(c.Name) + wire.FieldSize(len(c.Args)) + wire.TextSize(c.Raw)
	}
	return n
}

func resultsSize(results []ToolResult) int {
	n := wire.ListField
	for i := range results {
		r := &results[i]
		n += 1 + wire.TextSize(r.CallID) + wire.TextSize(r.Output) + wire.TextSize(r.Error) + wire.BoolField
		if r.Spent != nil {
			n += 2 + 4*wire.IntField
		}
		if len(r.Sources) > 0 {
			n += wire.StringsSize(r.Sources)
		}
		if len(r.Attachments) > 0 {
			n += attachmentsSize(r.Attachments)
		}
	}
	return n
}

func nativeCallsSize(calls []NativeCall) int {
	n := wire.ListField
	for i := range calls {
		c := &calls[i]
		n += 1 + wire.TextSize(c.ID) + wire.TextSize(c.Name) + wire.TextSize(c.Arguments)
	}
	return n
}

func toolsSize(tools []Tool) int {
	n := wire.ListField
	for i := range tools {
		t := &tools[i]
		n += 1 + toolKeys + wire.TextSize(string(t.Mode)) + wire.TextSize(t.Name) + wire.TextSize(t.Description) + wire.FieldSize(len(t.Parameters))
	}
	return n
}

func stateSize(st *State) int {
	n := 1 + wire.IntField + 2 + wire.TextSize(st.Request.Input) + wire.IntField + wire.TextSize(string(st.Phase))
	n += 2 + 8*wire.IntField + wire.TextSize(st.Counters.LastCall)
	for _, v := range [...]int64{int64(st.Counters.LowQuality), int64(st.Counters.ToolCalls), st.Counters.Cost, int64(st.Counters.Compactions)} {
		if v != 0 {
			n += wire.IntField
		}
	}
	n += wire.TextSize(st.Answer) + wire.TextSize(st.Escalation)
	if len(st.Messages) > 0 {
		n += messagesSize(st.Messages)
	}
	if p := st.Pending; p != nil {
		n += 2 + wire.TextSize(string(p.Kind)) + wire.TextSize(string(p.Role)) + wire.StringsSize(p.CallIDs)
	}
	if t := st.Turn; t != nil {
		n += 2 + callsSize(t.Calls) + resultsSize(t.Results) + 2*wire.BoolField
		if t.Program != nil {
			n += 2 + 2*wire.IntField
		}
		if m := t.Parse; m != nil {
			n += 2 + wire.TextSize(string(m.Format)) + wire.StringsSize(m.Warnings) + len(m.Spans)*(2+2*wire.IntField)
		}
	}
	if len(st.ToolsUsed) > 0 {
		n += wire.StringsSize(st.ToolsUsed)
	}
	if len(st.ToolsOK) > 0 {
		n += wire.StringsSize(st.ToolsOK)
	}
	if len(st.Sources) > 0 {
		n += wire.StringsSize(st.Sources)
	}
	if l := st.Recent; l != nil {
		n += 2 + wire.StringsSize(l.Calls) + wire.StringsSize(l.Outcomes) + wire.IntField + wire.BoolField
	}
	if fl := st.Failure; fl != nil {
		n += 2 + wire.TextSize(string(fl.Code)) + wire.TextSize(fl.Reason)
	}
	if st.Ctx != nil {
		n += 2 + 14*wire.IntField
	}
	n += wire.BoolField
	if c := st.Conv; c != nil {
		n += 2 + 2*wire.IntField + wire.TextSize(c.Input) + wire.StringsSize(c.Queue) + 2 + 13*wire.IntField + wire.TextSize(c.Base.LastCall)
	}
	return n
}
