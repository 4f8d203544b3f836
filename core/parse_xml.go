package core

import (
	"fmt"
	"strings"
)

// parseXML reads the xml format: any number of blocks
//
//	<tool name="search" tag="a1">{"query": "x"}</tool>
//
// anywhere in the reply. Attributes come in any order, in single or double
// quotes; name is required, tag (the call id) is optional. The body is a JSON
// object of arguments, or nothing for no arguments (as is a self-closing
// <tool name="now"/>); it is read with a JSON
// decoder, so "</tool>" and braces inside its strings are just text. The
// reply without its blocks, trimmed, is the message.
func parseXML(text string) (Parsed, error) {
	var p Parsed
	var msg strings.Builder
	i := 0
	for {
		j := findToolOpen(text, i)
		if j < 0 {
			msg.WriteString(text[i:])
			break
		}
		msg.WriteString(text[i:j])
		c, next, perr := readXMLBlock(text, j)
		if perr != nil {
			return Parsed{}, perr
		}
		p.Calls = append(p.Calls, c)
		p.Raw = append(p.Raw, text[j:next])
		i = next
	}
	p.Text = strings.TrimSpace(msg.String())
	return p, nil
}

const xmlClose = "</tool>"

// findToolOpen finds the next "<tool" that opens a tag (followed by space,
// '>' or '/', or cut off by the end of the reply), from i.
func findToolOpen(text string, i int) int {
	for i < len(text) {
		k := strings.Index(text[i:], "<tool")
		if k < 0 {
			return -1
		}
		j := i + k
		n := j + len("<tool")
		if n == len(text) {
			return j
		}
		switch text[n] {
		case ' ', '\t', '\r', '\n', '>', '/':
			return j
		}
		i = n
	}
	return -1
}

// readXMLBlock reads the block whose "<tool" is at text[j]; next is the
// offset just after its "</tool>".
func readXMLBlock(text string, j int) (c NativeCall, next int, perr *ParseError) {
	unclosed := func(what, closer string) *ParseError {
		return parseErrAt(FormatXML, text, j, "the <tool> %s opened here is not closed: the reply ended before %s (was it cut off?)", what, closer)
	}
	k := j + len("<tool")
	var name, tag string
	var haveName, haveTag, selfClosed bool
attrs:
	for {
		k = skipXMLSpace(text, k)
		switch {
		case k >= len(text):
			return NativeCall{}, 0, unclosed("tag", "its '>'")
		case text[k] == '>':
			k++
			break attrs
		case strings.HasPrefix(text[k:], "/>"):
			k += 2
			selfClosed = true
			break attrs
		}
		a := k
		for k < len(text) && isXMLNameByte(text[k]) {
			k++
		}
		attr := text[a:k]
		if attr == "" {
			return NativeCall{}, 0, parseErrAt(FormatXML, text, k, `unexpected %s in the <tool> tag; write <tool name="TOOL" tag="ID">{...}</tool>`, quoteExcerpt(text[k:]))
		}
		k = skipXMLSpace(text, k)
		if k >= len(text) {
			return NativeCall{}, 0, unclosed("tag", "its '>'")
		}
		if text[k] != '=' {
			return NativeCall{}, 0, parseErrAt(FormatXML, text, k, `the attribute %s of <tool> needs a quoted value: %s="..."`, attr, attr)
		}
		k = skipXMLSpace(text, k+1)
		if k >= len(text) {
			return NativeCall{}, 0, unclosed("tag", "its '>'")
		}
		q := text[k]
		if q != '"' && q != '\'' {
			return NativeCall{}, 0, parseErrAt(FormatXML, text, k, `the value of the attribute %s must be in quotes: %s="..."`, attr, attr)
		}
		e := strings.IndexByte(text[k+1:], q)
		if e < 0 {
			return NativeCall{}, 0, unclosed("tag", "its '>'")
		}
		val := xmlUnescape(text[k+1 : k+1+e])
		switch attr {
		case "name":
			if haveName {
				return NativeCall{}, 0, parseErrAt(FormatXML, text, a, "the attribute name appears twice in one <tool> tag")
			}
			name, haveName = val, true
		case "tag":
			if haveTag {
				return NativeCall{}, 0, parseErrAt(FormatXML, text, a, "the attribute tag appears twice in one <tool> tag")
			}
			tag, haveTag = val, true
		default:
			return NativeCall{}, 0, parseErrAt(FormatXML, text, a, "unknown attribute %q in the <tool> tag; only name and tag are allowed", attr)
		}
		k += e + 2
	}
	if strings.TrimSpace(name) == "" {
		return NativeCall{}, 0, parseErrAt(FormatXML, text, j, `a <tool> block needs the tool's name: <tool name="TOOL">{...}</tool>`)
	}
	c = NativeCall{ID: tag, Name: name, Arguments: "{}"}
	if selfClosed {
		return c, k, nil
	}
	b := skipXMLSpace(text, k)
	switch {
	case b >= len(text):
		return NativeCall{}, 0, unclosed("block", "</tool>")
	case strings.HasPrefix(text[b:], xmlClose):
		return c, b + len(xmlClose), nil
	case text[b] != '{':
		return NativeCall{}, 0, parseErrAt(FormatXML, text, b, `the body of <tool name=%q> must be a JSON object of arguments such as {"query": "x"}, found %s`, name, quoteExcerpt(text[b:]))
	}
	raw, stop, perr := decodeJSONObjectAt(FormatXML, text, b, len(text), fmt.Sprintf("the arguments of <tool name=%q>", name))
	if perr != nil {
		return NativeCall{}, 0, perr
	}
	c.Arguments = compactJSONText(raw)
	e := skipXMLSpace(text, stop)
	switch {
	case e >= len(text):
		return NativeCall{}, 0, unclosed("block", "</tool>")
	case !strings.HasPrefix(text[e:], xmlClose):
		return NativeCall{}, 0, parseErrAt(FormatXML, text, e, "expected </tool> after the JSON arguments of <tool name=%q>, found %s", name, quoteExcerpt(text[e:]))
	}
	return c, e + len(xmlClose), nil
}

func skipXMLSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

func isXMLNameByte(c byte) bool {
	return c == '_' || c == '-' || c == ':' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

var (
	xmlUnescaper = strings.NewReplacer("&quot;", `"`, "&apos;", "'", "&lt;", "<", "&gt;", ">", "&amp;", "&")
	xmlEscaper   = strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;")
)

func xmlUnescape(s string) string { return xmlUnescaper.Replace(s) }

// xmlAttr writes an attribute value in double quotes.
func xmlAttr(s string) string { return `"` + xmlEscaper.Replace(s) + `"` }

// renderXMLCall writes c as one <tool> block.
func renderXMLCall(c NativeCall) string {
	var b strings.Builder
	b.WriteString("<tool name=")
	b.WriteString(xmlAttr(c.Name))
	if c.ID != "" {
		b.WriteString(" tag=")
		b.WriteString(xmlAttr(c.ID))
	}
	b.WriteString(">")
	b.WriteString(renderArgsJSON(c.Arguments))
	b.WriteString(xmlClose)
	return b.String()
}
