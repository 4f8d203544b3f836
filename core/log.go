package core

import "slices"

// messageOverhead approximates the encoded size of a message beyond its text.
const messageOverhead = 16

// appendMessages appends to the run's message log and accounts for the bytes.
//
// The log is append-only and shared between a state and the states derived
// from it, so appending must never overwrite a slot another state already
// uses. A slot past len but within cap is free only while it is still the
// zero Message (every stored message has a Role); otherwise another state
// derived from the same parent claimed it and the log is copied first. This
// keeps appends amortised O(1) while resuming one state twice stays safe.
func appendMessages(st State, add ...Message) State {
	msgs := st.Messages
	if n := len(msgs); cap(msgs) > n && msgs[:n+1][n].Role != "" {
		msgs = append(make([]Message, 0, n+len(add)+8), msgs...)
	}
	st.Messages = append(msgs, add...)
	for _, m := range add {
		st.Counters.Bytes += messageSize(m)
	}
	return st
}

func messageSize(m Message) int {
	n := messageOverhead + len(m.Role) + len(m.Content) + len(m.CallID) + len(m.Name)
	for _, c := range m.Calls {
		n += messageOverhead + len(c.ID) + len(c.Name) + len(c.Args)
	}
	for _, a := range m.Attachments {
		n += messageOverhead + len(a.MIME) + len(a.Data)
	}
	if o := m.Opaque; o != nil {
		n += messageOverhead + len(o.Provider) + len(o.Data)
	}
	return n
}

// addOnce appends the values not yet in list, copying list first so the
// caller's slice is never written.
func addOnce(list []string, values ...string) []string {
	out := list
	for _, v := range values {
		if v == "" || slices.Contains(out, v) {
			continue
		}
		if len(out) == len(list) {
			out = append(make([]string, 0, len(list)+len(values)), list...)
		}
		out = append(out, v)
	}
	return out
}
