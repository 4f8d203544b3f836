package core

import "strings"

// autoOrder is the order in which the auto format tries the text formats,
// after native calls. Each is tried only when its marker is in the reply:
//
//  1. xml      the text contains "<tool"
//  2. helpers  the text contains "<helpers>"
//  3. fenced   the text contains "```tool"
//  4. json     the trimmed text starts with "{" (or a ```json fence) and
//     contains the key "tools"
//  5. strict   the trimmed text starts with {"tool"
var autoOrder = []Format{FormatXML, FormatHelpers, FormatFenced, FormatJSON, FormatStrict}

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
	for _, f := range autoOrder {
		if !autoMarker(f, text, trimmed) {
			continue
		}
		p, err := Parse(f, ModelReply{Text: text}, tools)
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		case len(p.Calls) > 0 || p.program != nil || f == FormatJSON:
			return p, nil
		}
	}
	if firstErr != nil {
		return Parsed{}, firstErr
	}
	return Parsed{Text: text}, nil
}

// autoMarker reports whether a reply carries format f's marker.
func autoMarker(f Format, text, trimmed string) bool {
	switch f {
	case FormatXML:
		return strings.Contains(text, "<tool")
	case FormatHelpers:
		return strings.Contains(text, helpersOpen)
	case FormatFenced:
		return strings.Contains(text, "```tool")
	case FormatJSON:
		return (strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "```json")) && strings.Contains(trimmed, `"tools"`)
	case FormatStrict:
		return looksLikeStrictCall(trimmed)
	}
	return false
}
