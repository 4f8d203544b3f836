package core

import "strings"

// helpersFormat is the helpers format: Python-style calls with literal
// arguments in <helpers> blocks, possibly a small program that uses
// results (parse_helpers.go), documented as Python signatures, results in
// <helpers_result> blocks.
var helpersFormat = FormatSpec{
	Parse:      parseHelpers,
	RenderCall: renderHelpersBlock,
	Docs: func(tools []Tool) string {
		var b strings.Builder
		writeHelpersDocs(&b, tools)
		return b.String()
	},
	RenderResults: taggedResults("helpers_result"),
	parseReply:    func(r ModelReply, tools []Tool) (Parsed, error) { return parseHelpers(r.Text, tools) },
}

// renderHelpersBlock writes c as a <helpers> block of one statement.
func renderHelpersBlock(c NativeCall) string {
	return helpersOpen + "\n" + renderHelpersCall(c) + "\n" + helpersClose
}
