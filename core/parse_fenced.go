package core

import "strings"

// parseFenced reads the fenced format: any number of fenced blocks whose info
// string is "tool", each holding one call object
//
//	```tool
//	{"tool": "search", "parameters": {"query": "x"}, "tag": "a1"}
//	```
//
// "parameters" and "tag" (the call id) may be left out; any other key is an
// error. Fences open and close on their own lines, with three or more
// backticks. Other fences (```python, ...) are message text, and a ```tool
// line inside them is not a call. A ```tool block that is never closed is an
// error: the reply was cut off. The reply without its tool blocks, trimmed, is
// the message.
func parseFenced(text string) (Parsed, error) {
	var p Parsed
	var msg strings.Builder
	for i := 0; i < len(text); {
		line, next := fenceLine(text, i)
		n, info := fenceOpen(line)
		if n == 0 {
			msg.WriteString(text[i:next])
			i = next
			continue
		}
		body := next
		closeAt, after := findFenceClose(text, body, n)
		if !isToolInfo(info) {
			if closeAt < 0 {
				msg.WriteString(text[i:])
				break
			}
			msg.WriteString(text[i:after])
			i = after
			continue
		}
		if closeAt < 0 {
			return Parsed{}, parseErrAt(FormatFenced, text, i, "the ```tool block opened here is not closed (was the reply cut off?); end it with ``` on its own line")
		}
		c, perr := readFencedCall(text, i, body, closeAt)
		if perr != nil {
			return Parsed{}, perr
		}
		p.Calls = append(p.Calls, c)
		p.Raw = append(p.Raw, strings.TrimRight(text[i:after], "\r\n"))
		i = after
	}
	p.Text = strings.TrimSpace(msg.String())
	return p, nil
}

var fencedCallShape = callShape{argsKey: "parameters", tag: true, example: `{"tool": "search", "parameters": {"query": "x"}}`}

// readFencedCall reads the one call object of the block opened at text[open],
// whose content is text[body:end].
func readFencedCall(text string, open, body, end int) (NativeCall, *ParseError) {
	k := skipJSONSpace(text, body, end)
	switch {
	case k >= end:
		return NativeCall{}, parseErrAt(FormatFenced, text, open, "this ```tool block is empty; put one call in it: %s", fencedCallShape.example)
	case text[k] != '{':
		return NativeCall{}, parseErrAt(FormatFenced, text, k, "a ```tool block must hold one JSON object such as %s, found %s", fencedCallShape.example, quoteExcerpt(text[k:end]))
	}
	raw, stop, perr := decodeJSONObjectAt(FormatFenced, text, k, end, "the call in the ```tool block")
	if perr != nil {
		return NativeCall{}, perr
	}
	if rest := skipJSONSpace(text, stop, end); rest < end {
		return NativeCall{}, parseErrAt(FormatFenced, text, rest, "a ```tool block holds exactly one call; found more after its JSON object: %s (put each call in its own block)", quoteExcerpt(text[rest:end]))
	}
	return callFromObject(FormatFenced, text, k, raw, fencedCallShape, "the call")
}

// fenceLine returns the line starting at i (without its newline) and the
// offset of the next line.
func fenceLine(text string, i int) (line string, next int) {
	e := strings.IndexByte(text[i:], '\n')
	if e < 0 {
		return text[i:], len(text)
	}
	return text[i : i+e], i + e + 1
}

// fenceOpen reports the backtick count (0: not a fence) and the info string
// of a line that opens a fence.
func fenceOpen(line string) (n int, info string) {
	s := strings.TrimLeft(line, " \t")
	for n < len(s) && s[n] == '`' {
		n++
	}
	if n < 3 || strings.Contains(s[n:], "`") {
		return 0, ""
	}
	return n, strings.TrimSpace(s[n:])
}

// isToolInfo reports whether a fence's info string marks a tool block: its
// first word is "tool".
func isToolInfo(info string) bool {
	word, _, _ := strings.Cut(info, " ")
	return strings.EqualFold(word, "tool")
}

// findFenceClose finds the line, from offset i, that closes a fence of n
// backticks: at least n backticks and nothing else. It returns the line's
// offset and the offset after it, or -1.
func findFenceClose(text string, i, n int) (at, after int) {
	for i < len(text) {
		line, next := fenceLine(text, i)
		s := strings.TrimSpace(line)
		if len(s) >= n && strings.Trim(s, "`") == "" {
			return i, next
		}
		i = next
	}
	return -1, -1
}

// renderFencedCall writes c as one ```tool block.
func renderFencedCall(c NativeCall) string {
	var b strings.Builder
	b.WriteString("```tool\n{\"tool\": ")
	appendJSONString(&b, c.Name)
	b.WriteString(`, "parameters": `)
	b.WriteString(renderArgsJSON(c.Arguments))
	if c.ID != "" {
		b.WriteString(`, "tag": `)
		appendJSONString(&b, c.ID)
	}
	b.WriteString("}\n```")
	return b.String()
}
