package helpers

import (
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core/internal/jsontext"
)

// Error locates a problem in a reply: Offset is a byte offset into it, Line
// and Col (1-based, the column counted in characters) the same place for
// people. Msg says what is wrong and how to write it, for the model.
type Error struct {
	Offset    int
	Line, Col int
	Msg       string
	// firm marks a refusal that Options.SourceText leaves a refusal (a
	// tool used inside a value, a bound exceeded).
	firm bool
}

// Error is the message with its place: line 2 column 5: ...
func (e *Error) Error() string {
	return fmt.Sprintf("line %d column %d: %s", e.Line, e.Col, e.Msg)
}

// errAt builds an Error located at byte off of text.
func errAt(text string, off int, format string, args ...any) *Error {
	off = max(0, min(off, len(text)))
	line, col := 1, 1
	for _, r := range text[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &Error{Offset: off, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func jsonQuoted(s string) string {
	var b strings.Builder
	appendJSONString(&b, s)
	return b.String()
}

// appendJSONString writes s to b as a JSON string (jsontext.AppendString).
func appendJSONString(b *strings.Builder, s string) { jsontext.AppendString(b, s) }

// quoteExcerpt quotes the start of s for a message (jsontext.Excerpt).
func quoteExcerpt(s string) string { return jsontext.Excerpt(s) }
