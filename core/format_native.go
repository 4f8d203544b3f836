package core

import "strings"

// nativeFormat is the native format: the model calls tools through its
// API (OpenAI-style tool_calls), which receives the tools as function
// definitions, so the system prompt documents none. Results come back as
// labeled paragraphs.
var nativeFormat = FormatSpec{
	Parse:       func(text string, _ []Tool) (Parsed, error) { return Parsed{Text: text}, nil },
	RenderCall:  renderNativeCall,
	Docs:        func([]Tool) string { return "" },
	parseReply:  func(r ModelReply, _ []Tool) (Parsed, error) { return parseNative(r), nil },
	nativeTools: true,
}

// parseNative takes OpenAI-style structured calls as they are; their
// arguments are checked by the validator.
func parseNative(r ModelReply) Parsed {
	return Parsed{Text: r.Text, Calls: r.Calls}
}

// renderNativeCall writes c as the OpenAI-style {"id", "name",
// "arguments"} object.
func renderNativeCall(c NativeCall) string {
	var b strings.Builder
	b.WriteString(`{"id": `)
	appendJSONString(&b, c.ID)
	b.WriteString(`, "name": `)
	appendJSONString(&b, c.Name)
	b.WriteString(`, "arguments": `)
	appendJSONString(&b, c.Arguments)
	b.WriteString("}")
	return b.String()
}
