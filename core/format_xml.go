package core

import (
	"fmt"
	"strings"
)

// xmlFormat is the xml format: <tool name="x" tag="id">{json}</tool> blocks
// anywhere in the reply (parse_xml.go), results in <tool_result> blocks.
var xmlFormat = FormatSpec{
	Parse:         func(text string, _ []Tool) (Parsed, error) { return parseXML(text) },
	RenderCall:    renderXMLCall,
	Docs:          xmlDocs,
	RenderResults: taggedResults("tool_result"),
	parseReply:    func(r ModelReply, _ []Tool) (Parsed, error) { return parseXML(r.Text) },
}

func xmlDocs(tools []Tool) string {
	return schemaDocs(fmt.Sprintf("You can call tools by writing blocks like this anywhere in your reply:\n\n%s\n\n", renderXMLCall(exampleCall(tools[0])))+
		"- The body is a JSON object of arguments; tag is optional and names the call.\n"+
		"- You may write several blocks; they run in the order written. Text outside the blocks is your message.\n"+
		"- Each result comes back in a <tool_result name=\"...\" tag=\"...\"> block.\n"+
		"- To give your final answer, reply without a <tool> block.\n", tools)
}

// taggedResults writes each result in a block <tag name=... tag=...>, as
// xml (tool_result) and helpers (helpers_result) do; a failed call's block
// carries error="true".
func taggedResults(tag string) func(calls []ToolCall, results []ToolResult) string {
	return func(calls []ToolCall, results []ToolResult) string {
		var b strings.Builder
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			failed := ""
			if results[i].Failed() {
				failed = ` error="true"`
			}
			fmt.Fprintf(&b, "<%s name=%s tag=%s%s>\n%s\n</%s>", tag, xmlAttr(c.Name), xmlAttr(c.ID), failed, resultBody(results[i]), tag)
		}
		return b.String()
	}
}
