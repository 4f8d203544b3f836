package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/core"
)

// formatResult turns a tools/call result into the tool's output: text parts
// joined by newlines, a note for each non-text part (the text of an embedded
// text resource is kept), and the structured content as JSON when there is
// no text. With isError the same text is the error.
func formatResult(res *mcp.CallToolResult) core.ToolResult {
	var parts, sources []string
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
			hasText = true
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[%s content, %d bytes]", mimeOr(c.MIMEType, "image"), len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[%s content, %d bytes]", mimeOr(c.MIMEType, "audio"), len(c.Data)))
		case *mcp.EmbeddedResource:
			r := c.Resource
			if r == nil {
				parts = append(parts, "[empty resource]")
				continue
			}
			sources = append(sources, r.URI)
			if r.Blob != nil {
				parts = append(parts, fmt.Sprintf("[resource %s: %s content, %d bytes]", r.URI, mimeOr(r.MIMEType, "binary"), len(r.Blob)))
				continue
			}
			parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			hasText = true
		case *mcp.ResourceLink:
			sources = append(sources, c.URI)
			note := "[resource link " + c.URI
			if c.Name != "" && c.Name != c.URI {
				note += " (" + c.Name + ")"
			}
			parts = append(parts, note+"]")
		default:
			parts = append(parts, fmt.Sprintf("[%s content]", strings.TrimPrefix(fmt.Sprintf("%T", c), "*mcp.")))
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	out := strings.Join(parts, "\n")
	if res.IsError {
		if strings.TrimSpace(out) == "" {
			out = "the tool reported an error without a message"
		}
		return core.ToolResult{Error: out, Sources: sources}
	}
	return core.ToolResult{Output: out, Sources: sources}
}

func mimeOr(mime, kind string) string {
	if mime == "" {
		return kind
	}
	return mime
}
