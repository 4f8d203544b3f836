package core

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// Structured output (ADR 0034). An agent with an output schema answers
// with a JSON value that fits it: the core checks every final answer with
// the validator tool arguments are checked with (types exact, no
// coercion), sends a reply that does not fit back to the model as a
// correction (at most OutputPolicy.MaxCorrections times in a row, 1 by
// default), then fails the run with invalid_output. The answer that fits is
// its canonical JSON (sorted keys, no insignificant space), in
// Complete.Answer and Complete.Output. A model that wraps the value in a
// Markdown code fence is read through it.

// OutputPolicy is an agent's [output] table.
type OutputPolicy struct {
	// Schema is the JSON Schema of the answer (any type at its root).
	Schema json.RawMessage `json:"schema"`
	// MaxCorrections is how many replies in a row that do not fit are
	// sent back (0: 1); NoCorrections makes it none.
	MaxCorrections int  `json:"max_corrections,omitempty"`
	NoCorrections  bool `json:"no_corrections,omitempty"`
}

func (o OutputPolicy) maxCorrections() int {
	if o.NoCorrections {
		return 0
	}
	return pick(o.MaxCorrections, 1)
}

// Errors are the problems of the policy's settings.
func (o OutputPolicy) Errors() []string {
	var errs []string
	if _, err := schema.CompileOutput(o.Schema); err != nil {
		errs = append(errs, fmt.Sprintf("output.schema: %v", err))
	}
	if o.MaxCorrections < 0 {
		errs = append(errs, "output.max_corrections is negative")
	}
	return errs
}

// structured checks an answer against the agent's output schema: it
// returns the value's canonical JSON, or why it does not fit.
func structured(cfg Config, text string) (json.RawMessage, error) {
	s, err := cfg.outputSchema()
	if err != nil {
		return nil, err
	}
	text = unfence(strings.TrimSpace(text))
	if err := s.Check(text); err != nil {
		return nil, err
	}
	v, err := schema.DecodeValue(text)
	if err != nil {
		return nil, err
	}
	return schema.Canonical(v)
}

// outputSchema is the agent's compiled output schema.
func (c Config) outputSchema() (*schema.Output, error) {
	if c.compiled != nil && c.compiled.output != nil {
		return c.compiled.output, nil
	}
	return schema.CompileOutput(c.Output.Schema)
}

// unfence reads a value out of a Markdown code fence (```json ... ```)
// that holds nothing else.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return s
	}
	if lang := strings.TrimSpace(body[:nl]); lang != "" && lang != "json" && lang != "JSON" {
		return s
	}
	return strings.TrimSpace(body[nl+1:])
}

// completeAction is the Complete of an ended run's state st, its Output
// set when the answer is structured.
func completeAction(st State) Complete {
	c := Complete{Answer: st.Answer, ToolsUsed: st.ToolsUsed, Sources: st.Sources, State: st}
	if st.Structured {
		c.Output = json.RawMessage(st.Answer)
	}
	return c
}

// outputCorrection is what the model reads of an answer that does not fit.
func outputCorrection(err error, sch json.RawMessage) string {
	return fmt.Sprintf("Your final answer must be one JSON value that fits this JSON Schema, and nothing else:\n%s\nIt did not: %v\nReply again with the JSON value alone (or call tools first if you need to).", sch, err)
}

// OutputDocs is what the system prompt tells the model about an answer
// that must fit a schema.
func outputDocs(cfg Config) string {
	if cfg.Output == nil {
		return ""
	}
	return "Your final answer (the reply in which you call no tool) must be one JSON value that fits this JSON Schema, and nothing else:\n" + string(cfg.Output.Schema)
}
