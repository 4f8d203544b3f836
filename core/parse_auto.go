package core

import (
	"fmt"
	"strings"
)

// autoFormat is the auto format: native calls, or any text format the
// model chose (parseAuto). The tools travel with the model request as for
// native, and the docs show every text form.
var autoFormat = FormatSpec{
	Parse:       func(text string, tools []Tool) (Parsed, error) { return parseAuto(ModelReply{Text: text}, tools) },
	RenderCall:  renderXMLCall,
	Docs:        autoDocs,
	parseReply:  parseAuto,
	nativeTools: true,
}

// autoCandidate is a text format auto tries: its spec, the marker a reply
// must carry for it to be tried, and whether a reply it reads is taken
// even without calls.
type autoCandidate struct {
	format  Format
	spec    *FormatSpec
	marker  func(text, trimmed string) bool
	noCalls bool
}

// autoOrder is the order in which the auto format tries the text formats,
// after native calls. Each is tried only when its marker is in the reply:
//
//  1. xml      the text contains "<tool"
//  2. helpers  the text contains "<helpers>"
//  3. fenced   the text contains "```tool"
//  4. json     the trimmed text starts with "{" (or a ```json fence) and
//     contains the key "tools"
//  5. strict   the trimmed text starts with {"tool"
var autoOrder = []autoCandidate{
	{FormatXML, &xmlFormat, func(text, _ string) bool { return strings.Contains(text, "<tool") }, false},
	{FormatHelpers, &helpersFormat, func(text, _ string) bool { return strings.Contains(text, helpersOpen) }, false},
	{FormatFenced, &fencedFormat, func(text, _ string) bool { return strings.Contains(text, "```tool") }, false},
	{FormatJSON, &jsonFormat, func(_, trimmed string) bool {
		return (strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "```json")) && strings.Contains(trimmed, `"tools"`)
	}, true},
	{FormatStrict, &strictFormat, func(_, trimmed string) bool { return looksLikeStrictCall(trimmed) }, false},
}

// parseAuto reads a reply in whatever format the model chose. Native calls
// (r.Calls) win outright. Otherwise the text formats are tried in autoOrder:
// the first that reads the reply without error and finds calls wins (a json
// envelope also wins without calls: its "message" is the answer). When none
// wins but one reported an error, the first error is returned, so a cut-off
// or malformed call is corrected rather than taken for an answer. Otherwise
// the reply is a final answer.
func parseAuto(r ModelReply, tools []Tool) (Parsed, error) {
	if len(r.Calls) > 0 {
		return parseNative(r), nil
	}
	text := r.Text
	trimmed := strings.TrimSpace(text)
	var firstErr error
	for _, c := range autoOrder {
		if !c.marker(text, trimmed) {
			continue
		}
		p, err := c.spec.parse(c.format, ModelReply{Text: text}, tools)
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		case len(p.Calls) > 0 || p.program != nil || c.noCalls:
			p.Meta.Format = c.format
			return p, nil
		}
	}
	if firstErr != nil {
		return Parsed{}, firstErr
	}
	return Parsed{Text: text}, nil
}

// autoDocs lists the accepted forms, each with an example call, then the
// tools' schemas.
func autoDocs(tools []Tool) string {
	ex := exampleCall(tools[0])
	hx := ex
	hx.ID = ""
	var b strings.Builder
	b.WriteString("You can call tools in any one of these forms:\n\n")
	fmt.Fprintf(&b, "- blocks anywhere in your reply: %s\n", renderXMLCall(ex))
	fmt.Fprintf(&b, "- Python-style calls with literal arguments, one per line: %s\n", strings.ReplaceAll(renderHelpersBlock(hx), "\n", " "))
	fmt.Fprintf(&b, "- fenced blocks: ```tool then %s on its own line, then ```\n", strings.TrimSuffix(strings.TrimPrefix(renderFencedCall(ex), "```tool\n"), "\n```"))
	fmt.Fprintf(&b, "- a reply that is exactly one JSON object: %s\n", renderJSONEnvelope("what you tell the user", []NativeCall{ex}))
	fmt.Fprintf(&b, "- a reply that is exactly one call: %s\n", renderStrictCall(hx))
	b.WriteString("\nArguments are JSON objects. Calls run in the order written. To give your final answer, reply in plain text without any call.\n")
	return schemaDocs(b.String(), tools)
}
