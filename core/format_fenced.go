package core

import (
	"fmt"
	"strings"
)

// fencedFormat is the fenced format: ```tool blocks holding
// {"tool", "parameters", "tag"} (parse_fenced.go), documented in the shape
// of the seed's tool registry, results in ```tool_result blocks.
var fencedFormat = FormatSpec{
	Parse:      func(text string, _ []Tool) (Parsed, error) { return parseFenced(text) },
	RenderCall: renderFencedCall,
	Docs: func(tools []Tool) string {
		var b strings.Builder
		writeFencedDocs(&b, tools)
		return b.String()
	},
	RenderResults: fencedResults,
	parseReply:    func(r ModelReply, _ []Tool) (Parsed, error) { return parseFenced(r.Text) },
}

func fencedResults(calls []ToolCall, results []ToolResult) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteString("\n")
		}
		text := resultBody(results[i])
		fence := strings.Repeat("`", max(3, longestBacktickRun(text)+1))
		failed := "" // a failed call's block says so after its id
		if results[i].Failed() {
			failed = " error"
		}
		fmt.Fprintf(&b, "%stool_result %s %s%s\n%s\n%s", fence, c.Name, c.ID, failed, text, fence)
	}
	return b.String()
}

func longestBacktickRun(s string) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}
