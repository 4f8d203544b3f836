package core

import (
	"encoding/json"
	"strings"

	"github.com/stepwise-agent/stepwise/core/helpers"
)

// The core's side of the helpers language (package helpers) when reading a
// reply: the agent's tools as the parser needs them, and its results as
// Parsed and ParseError. helpers_turn.go runs the programs.

// helperProgram is a reply's program of statements that use names.
type helperProgram = helpers.Program

const (
	helpersOpen  = helpers.Open
	helpersClose = helpers.Close
)

// isPyIdentifier reports whether s can be written as a keyword argument name.
func isPyIdentifier(s string) bool { return helpers.IsIdentifier(s) }

// parseHelpers reads the helpers format (see helpers.Parse): a block of
// literal calls parses to Calls, a program to Parsed.program, which the
// core interprets statement by statement (helpers_turn.go).
func parseHelpers(text string, tools []Tool) (Parsed, error) {
	return parseHelpersWith(helpers.Options{}, text, tools)
}

// parseHelpersWith is parseHelpers with the parser's switches o; the
// parser's warnings go to Parsed.Meta.
func parseHelpersWith(o helpers.Options, text string, tools []Tool) (Parsed, error) {
	hp, err := o.Parse(text, parserTools(tools))
	if err != nil {
		return Parsed{}, helpersParseError(text, err)
	}
	p := Parsed{Text: hp.Text, Raw: hp.Raw, program: hp.Program, Meta: ParseMeta{Warnings: hp.Warnings}}
	if hp.Calls != nil {
		p.Calls = make([]NativeCall, len(hp.Calls))
		for i, c := range hp.Calls {
			p.Calls[i] = NativeCall{Name: c.Name, Arguments: c.Arguments}
		}
	}
	return p, nil
}

// helpersOptions are the helpers parser's switches under c: SourceText
// when c's format is helpers and Policy.HelpersSourceText is set. Every
// parse of a reply of c's (the reply, and the program of a turn read
// again from it: programOf) uses them, so they read it the same.
func (c Config) helpersOptions() helpers.Options {
	return helpers.Options{SourceText: c.Policy.HelpersSourceText && c.format() == FormatHelpers}
}

// parseHelperProgram reads the statements of every block of a reply as one
// program (a block of literal calls too), and the message around them.
func parseHelperProgram(text string, tools []Tool) (Parsed, *helperProgram, error) {
	msg, prog, err := helpers.ParseProgram(text, parserTools(tools))
	if err != nil {
		return Parsed{}, prog, helpersParseError(text, err)
	}
	return Parsed{Text: msg}, prog, nil
}

// helpersParseError is the parser's error as the ParseError of the helpers
// format.
func helpersParseError(text string, err error) error {
	if e, ok := err.(*helpers.Error); ok {
		return &ParseError{Format: FormatHelpers, Offset: e.Offset, Line: e.Line, Col: e.Col, Msg: e.Msg}
	}
	return parseErrAt(FormatHelpers, text, 0, "%v", err)
}

// parserTools is the agent's tools as the parser reads them.
func parserTools(tools []Tool) []helpers.Tool {
	out := make([]helpers.Tool, len(tools))
	for i, t := range tools {
		out[i] = helpers.Tool{Name: t.Name, Parameters: t.Parameters}
	}
	return out
}

// helperParamOrder lists the names under a schema's "properties" in the
// order the schema text writes them: the order positional arguments take
// (helpers.ParamOrder).
func helperParamOrder(schema json.RawMessage) []string { return helpers.ParamOrder(schema) }

// helperArg is an argument as JSON (its name and value), for the example
// calls of the tool docs (prompt.go).
type helperArg struct {
	key, json string
}

// membersJSON writes arguments as a JSON object, in their order: the text
// package helpers gives a block of literal calls.
func membersJSON(members []helperArg) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		appendJSONString(&b, m.key)
		b.WriteByte(':')
		b.WriteString(m.json)
	}
	b.WriteByte('}')
	return b.String()
}
