package core

import (
	"fmt"
	"strings"
)

// jsonFormat is the json format: the whole reply is one envelope
// {"message": ..., "tools": [{"tool", "args", "tag"}]} (parse_json.go),
// results one {"results": [...]} object.
var jsonFormat = FormatSpec{
	Parse:         func(text string, _ []Tool) (Parsed, error) { return parseJSON(text) },
	RenderCall:    func(c NativeCall) string { return renderJSONEnvelope("", []NativeCall{c}) },
	Docs:          jsonDocs,
	RenderResults: jsonResults,
	parseReply:    func(r ModelReply, _ []Tool) (Parsed, error) { return parseJSON(r.Text) },
}

func jsonDocs(tools []Tool) string {
	return schemaDocs(fmt.Sprintf("Always reply with exactly one JSON object and nothing else:\n\n%s\n\n", renderJSONEnvelope("what you tell the user", []NativeCall{exampleCall(tools[0])}))+
		"- \"tools\" lists the calls to make; they run in order. \"tag\" is optional and names the call.\n"+
		"- \"message\" and \"tools\" are the only keys; a call has only \"tool\", \"args\" and \"tag\".\n"+
		"- The results come back as a JSON object {\"results\": [...]}.\n"+
		"- To give your final answer, put it in \"message\" with \"tools\": [].\n", tools)
}

func jsonResults(calls []ToolCall, results []ToolResult) string {
	var b strings.Builder
	b.WriteString(`{"results": [`)
	for i, c := range calls {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		writeJSONResult(&b, c, results[i], true)
	}
	b.WriteString("\n]}")
	return b.String()
}

// writeJSONResult writes one result as {"tool": ..., "result": ...}, or
// {"tool": ..., "ok": false, "error": ...} for a failed call, with the
// call's "tag" after its name when tagged.
func writeJSONResult(b *strings.Builder, c ToolCall, r ToolResult, tagged bool) {
	b.WriteString(`{"tool": `)
	appendJSONString(b, c.Name)
	if tagged {
		b.WriteString(`, "tag": `)
		appendJSONString(b, c.ID)
	}
	if r.Failed() {
		b.WriteString(`, "ok": false, "error": `)
		appendJSONString(b, r.Error)
	} else {
		b.WriteString(`, "result": `)
		appendJSONString(b, r.Output)
	}
	b.WriteString("}")
}
