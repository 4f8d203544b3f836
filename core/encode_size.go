package core

import "math"

// Size estimates, so that encoding takes one allocation. They are upper
// bounds (TestEncodeAllocatesOnce checks it): each counts a field whether or
// not it is omitted, an integer as 9 bytes, and a struct by its map head and
// the sizes of its fields, each with its key.

const (
	listField = 1 + 9 // key and array head
	intField  = 1 + 9 // key and integer
	boolField = 1 + 1
	// toolKeys is what Tool's text keys take beyond the one byte a key is
	// counted as elsewhere, and its bool and int fields.
	toolKeys = 80
)

// textSize is the size of a text field: its key, head and bytes.
func textSize(s string) int { return fieldSize(len(s)) }

// fieldSize is the size of a field of n bytes of text or bytes: its key, head
// and bytes.
func fieldSize(n int) int {
	switch {
	case n < 24:
		return 2 + n
	case n <= math.MaxUint8:
		return 3 + n
	case n <= math.MaxUint16:
		return 4 + n
	case n <= math.MaxUint32:
		return 6 + n
	default:
		return 10 + n
	}
}

func stringsSize(list []string) int {
	n := listField
	for _, s := range list {
		n += textSize(s)
	}
	return n
}

func messagesSize(msgs []Message) int {
	n := listField
	for i := range msgs {
		m := &msgs[i]
		n += 1 + textSize(string(m.Role)) + textSize(m.Content) + textSize(m.CallID) + textSize(m.Name) + boolField
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
	n := listField
	for i := range list {
		n += 1 + textSize(list[i].MIME) + fieldSize(len(list[i].Data))
	}
	return n
}

// opaqueSize is the size of an Opaque field (0 when nil).
func opaqueSize(o *Opaque) int {
	if o == nil {
		return 0
	}
	return 2 + textSize(o.Provider) + fieldSize(len(o.Data))
}

func callsSize(calls []ToolCall) int {
	n := listField
	for i := range calls {
		c := &calls[i]
		n += 1 + textSize(c.ID) + textSize(c.Name) + fieldSize(len(c.Args)) + textSize(c.Raw)
	}
	return n
}

func resultsSize(results []ToolResult) int {
	n := listField
	for i := range results {
		r := &results[i]
		n += 1 + textSize(r.CallID) + textSize(r.Output) + textSize(r.Error) + boolField
		if len(r.Sources) > 0 {
			n += stringsSize(r.Sources)
		}
		if len(r.Attachments) > 0 {
			n += attachmentsSize(r.Attachments)
		}
	}
	return n
}

func nativeCallsSize(calls []NativeCall) int {
	n := listField
	for i := range calls {
		c := &calls[i]
		n += 1 + textSize(c.ID) + textSize(c.Name) + textSize(c.Arguments)
	}
	return n
}

func toolsSize(tools []Tool) int {
	n := listField
	for i := range tools {
		t := &tools[i]
		n += 1 + toolKeys + textSize(string(t.Mode)) + textSize(t.Name) + textSize(t.Description) + fieldSize(len(t.Parameters))
	}
	return n
}

func stateSize(st *State) int {
	n := 1 + intField + 2 + textSize(st.Request.Input) + textSize(string(st.Phase))
	n += 2 + 8*intField + textSize(st.Counters.LastCall)
	for _, v := range [...]int64{int64(st.Counters.LowQuality), int64(st.Counters.ToolCalls), st.Counters.Cost} {
		if v != 0 {
			n += intField
		}
	}
	n += textSize(st.Answer) + textSize(st.Escalation)
	if len(st.Messages) > 0 {
		n += messagesSize(st.Messages)
	}
	if p := st.Pending; p != nil {
		n += 2 + textSize(string(p.Kind)) + textSize(string(p.Role)) + stringsSize(p.CallIDs)
	}
	if t := st.Turn; t != nil {
		n += 2 + callsSize(t.Calls) + resultsSize(t.Results) + 2*boolField
		if t.Program != nil {
			n += 2 + 2*intField
		}
	}
	if len(st.ToolsUsed) > 0 {
		n += stringsSize(st.ToolsUsed)
	}
	if len(st.Sources) > 0 {
		n += stringsSize(st.Sources)
	}
	if l := st.Recent; l != nil {
		n += 2 + stringsSize(l.Calls) + stringsSize(l.Outcomes) + intField + boolField
	}
	if fl := st.Failure; fl != nil {
		n += 2 + textSize(string(fl.Code)) + textSize(fl.Reason)
	}
	return n
}
