package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/core"
)

// formatResult turns a tools/call result into the tool's output: text parts
// joined by newlines, a note for each non-text part (the text of an embedded
// text resource is kept), and the structured content as JSON when there is
// no text. An image or a sound of at most maxAttachment bytes is also kept as
// an attachment, which a model that accepts it receives instead of reading
// its note; a larger one is only noted. With isError the same text is the
// error. A tool with an output schema (out) must return structured content
// that fits it, unless it reports an error: otherwise the call failed.
func formatResult(res *mcp.CallToolResult, out *jsonschema.Resolved, maxAttachment int) core.ToolResult {
	var parts, sources []string
	var attachments []core.Attachment
	hasText := false
	media := func(kind, mime string, data []byte) {
		mime = mimeOr(mime, kind)
		if len(data) > maxAttachment {
			parts = append(parts, fmt.Sprintf("[%s content, %d bytes: over the %d-byte limit, not shown]", mime, len(data), maxAttachment))
			return
		}
		parts = append(parts, fmt.Sprintf("[%s content, %d bytes]", mime, len(data)))
		attachments = append(attachments, core.Attachment{MIME: mime, Data: data})
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
			hasText = true
		case *mcp.ImageContent:
			media("image", c.MIMEType, c.Data)
		case *mcp.AudioContent:
			media("audio", c.MIMEType, c.Data)
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
	structured, serr := checkStructured(res, out)
	if !hasText && structured != "" {
		parts = append(parts, structured)
	}
	text := strings.Join(parts, "\n")
	switch {
	case res.IsError:
		if strings.TrimSpace(text) == "" {
			text = "the tool reported an error without a message"
		}
		return core.ToolResult{Error: text, Sources: sources, Attachments: attachments}
	case serr != "":
		return core.ToolResult{Error: serr, Sources: sources}
	}
	return core.ToolResult{Output: text, Sources: sources, Attachments: attachments}
}

// checkStructured renders the result's structured content as JSON (object
// keys sorted) and, for a tool with an output schema that did not report an
// error, says what is wrong with it ("" when nothing is).
func checkStructured(res *mcp.CallToolResult, out *jsonschema.Resolved) (structured, problem string) {
	var value any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(b, &value)
		}
		if err != nil {
			return "", fmt.Sprintf("the tool's structured content is not JSON: %v", err)
		}
		b, _ = json.Marshal(value) // maps marshal with sorted keys
		structured = string(b)
	}
	if out == nil || res.IsError {
		return structured, ""
	}
	if res.StructuredContent == nil {
		return structured, "the tool declares an output schema but returned no structured content"
	}
	if err := out.Validate(value); err != nil {
		return structured, fmt.Sprintf("the tool's structured content does not fit its output schema: %v; it was %s", err, clipJSON(structured))
	}
	return structured, ""
}

// compileOutputSchema resolves a tool's output schema for validation.
func compileOutputSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// clipJSON cuts s to about 200 bytes, on a UTF-8 boundary.
func clipJSON(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func mimeOr(mime, kind string) string {
	if mime == "" {
		return kind
	}
	return mime
}
