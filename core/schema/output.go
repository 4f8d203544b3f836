package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Output is a compiled JSON Schema that a tool's output is checked
// against: the keyword subset tool arguments are checked with
// (docs/adr/0003-schema-validation.md), with any type at the root. The
// shell uses it for tools that declare an output schema; it is immutable and
// safe for concurrent use.
type Output struct {
	s *Schema
}

// ErrOutput wraps every error Output.Check returns.
var ErrOutput = errors.New("the output does not fit the tool's output schema")

// CompileOutput compiles raw, naming every problem (an unsupported
// keyword, a pattern that does not compile, a default that does not fit).
// An empty schema is an error: a tool without one declares nothing.
func CompileOutput(raw json.RawMessage) (*Output, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New("the output schema is empty")
	}
	c := &schemaCompiler{}
	s := c.node(raw, "", nil)
	c.checkRequired()
	c.checkDefaults()
	if len(c.errs) > 0 {
		return nil, errors.New(strings.Join(c.errs, "; "))
	}
	return &Output{s: s}, nil
}

// Check reports whether output, a JSON text, fits the schema. Types are
// exact, as for arguments (no coercion: "5" is not an integer); unknown
// properties are allowed unless the schema closes the object. The error
// wraps ErrOutput and names every mismatch by its path in the output
// (field "items[2].id": expected an integer, found "7").
func (o *Output) Check(output string) error {
	dec := json.NewDecoder(strings.NewReader(output))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%w: the output is not JSON: %v", ErrOutput, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: the output holds more than one JSON value", ErrOutput)
	}
	c := &argChecker{}
	c.value(o.s, v, nil, false)
	if len(c.errs) == 0 {
		return nil
	}
	errs := c.result()
	texts := make([]string, len(errs))
	for i, e := range errs {
		texts[i] = outputWords.Replace(e.text)
	}
	return fmt.Errorf("%w: %s", ErrOutput, strings.Join(texts, "; "))
}

// outputWords turns the argument checker's words into words about an
// output: its messages name "arguments", an output has fields.
var outputWords = strings.NewReplacer(
	"missing required argument ", "missing required field ",
	"unknown argument ", "unknown field ",
	"the arguments of ", "the fields of ",
	"the arguments are", "the fields are",
	"takes no arguments", "has no fields",
	"the arguments", "the output",
	"argument ", "field ",
)
