package core

import (
	"fmt"
	"strings"
)

// strictFormat is the strict format: a call is the whole reply, exactly
// {"tool": ..., "args": ...} (parse_strict.go); each result comes back as
// one {"tool": ..., "result": ...} object, or, for a tool with a Summary,
// as a line of the seed's loop history (renderTurnResults).
var strictFormat = FormatSpec{
	Parse:          func(text string, _ []Tool) (Parsed, error) { return parseStrict(text) },
	RenderCall:     renderStrictCall,
	Docs:           strictDocs,
	RenderResults:  strictResults,
	parseReply:     func(r ModelReply, _ []Tool) (Parsed, error) { return parseStrict(r.Text) },
	historyResults: true,
}

func strictDocs(tools []Tool) string {
	ex := exampleCall(tools[0])
	ex.ID = ""
	return schemaDocs(fmt.Sprintf("To call a tool, reply with exactly one JSON object and nothing else:\n\n%s\n\n", renderStrictCall(ex))+
		"- Only the keys \"tool\" and \"args\"; one call per reply. The result comes back in the next message.\n"+
		"- To give your final answer, reply in plain text (not JSON).\n", tools)
}

func strictResults(calls []ToolCall, results []ToolResult) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteString("\n")
		}
		writeJSONResult(&b, c, results[i], false)
	}
	return b.String()
}
