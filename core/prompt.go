package core

import (
	"fmt"
	"strings"
)

// ToolDocs is the tool documentation for the system prompt, in the syntax of
// the agent's format. It is empty for the native format, whose tools travel
// in the API request instead, and for an agent without tools.
func ToolDocs(cfg Config) string {
	tools := cfg.tools()
	if len(tools) == 0 || cfg.format() == FormatNative {
		return ""
	}
	var b strings.Builder
	b.WriteString("You can call these tools:\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "\n%s: %s\nparameters: %s\n", t.Name, t.Description, string(t.Parameters))
	}
	return b.String()
}

// RenderResults is the text that hands a turn's results back to a model that
// writes calls as text, in the order the calls were made.
func RenderResults(f Format, calls []ToolCall, results []ToolResult) string {
	var b strings.Builder
	b.WriteString("Tool results:")
	for i, c := range calls {
		fmt.Fprintf(&b, "\n[%s] %s: %s", c.ID, c.Name, resultText(results[i]))
	}
	return b.String()
}
