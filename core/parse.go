package core

import (
	"errors"
	"fmt"
	"strings"
)

// Parsed is a model reply split into its message text and its tool calls, in
// the order the model wrote them. Arguments are still raw JSON text.
type Parsed struct {
	Text  string
	Calls []NativeCall
	// Raw is, for each call of a text format, the text it was parsed from
	// (aligned with Calls); nil for native calls.
	Raw []string
	// program is set when helpers blocks form a program whose statements
	// use results (ADR 0016): Calls is then empty, and the core makes the
	// calls as it interprets the program.
	program *helperProgram
	// Meta is what the parser noticed (the format auto chose, warnings);
	// the core adds where each call sat and records it with the step.
	Meta ParseMeta
}

// spansOf finds each raw call text in text, in order, each after the one
// before; a call whose text is not found gets no span after it.
func spansOf(text string, raw []string) []Span {
	var out []Span
	at := 0
	for _, r := range raw {
		if r == "" {
			return out
		}
		i := strings.Index(text[at:], r)
		if i < 0 {
			return out
		}
		out = append(out, Span{Start: at + i, End: at + i + len(r)})
		at += i + len(r)
	}
	return out
}

// raw is the text call i was parsed from ("" when unknown).
func (p Parsed) raw(i int) string {
	if i < len(p.Raw) {
		return p.Raw[i]
	}
	return ""
}

// ErrParse wraps every error a parser returns; the message goes back to the
// model as a correction.
var ErrParse = errors.New("could not read the tool calls")

// ParseError locates a problem in a reply. Offset is a byte offset into the
// reply text; Line and Col are 1-based (0 when unknown).
type ParseError struct {
	Format    Format
	Offset    int
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s format, line %d column %d: %s", e.Format, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s format: %s", e.Format, e.Msg)
}

// Unwrap makes every ParseError match ErrParse.
func (e *ParseError) Unwrap() error { return ErrParse }

// Parse reads the tool calls out of a reply in built-in format f
// (Formats.Parse also reads the formats a program adds). tools is the
// agent's tool list; the helpers format needs it to map positional
// arguments. A reply with no call parses to its text alone: a final answer.
func Parse(f Format, r ModelReply, tools []Tool) (Parsed, error) {
	return (*Formats)(nil).Parse(f, r, tools)
}
