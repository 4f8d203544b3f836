package core

import (
	"bytes"
	"encoding/json"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// compiledAgent is what Compile works out of a Config once, so that Start, Step
// and Resume need not work it out again: the format table and the resolved
// format, and each tool's compiled argument schema. It is never changed
// after Compile, so the configs that share it may be used from several
// goroutines.
type compiledAgent struct {
	formats *Formats
	format  Format
	spec    FormatSpec
	schemas map[string]compiledSchema
	// output is the compiled output schema (nil without one).
	output *schema.Output
}

// compiledSchema is a tool's argument schema, compiled from raw.
type compiledSchema struct {
	raw    json.RawMessage
	schema *argSchema
}

// Compile validates cfg, as Validate does, and returns it compiled: its
// format looked up in formats (nil: the built-in formats alone) and every
// tool's argument schema compiled. The shell compiles an agent once and
// hands the result to Start, Step and Resume, which then skip that work on
// every call.
//
// The result is the same plain data (its JSON, CBOR and ConfigHash are
// cfg's): the compiled form rides along in an unexported field, is shared
// by its copies, and is never encoded. A Config that was never compiled
// works the same, only slower (what it needs is compiled on every call),
// and can only name a built-in format. A compiled Config changed afterwards
// stays correct: a tool whose schema or a format whose name no longer
// matches what was compiled is worked out again on each use.
//
// Compiling a config compiled before reuses the argument schemas it holds
// whose bytes are unchanged (a schema's compiled form depends on its bytes
// alone); the format is looked up in formats again.
func Compile(cfg Config, formats *Formats) (Config, error) {
	c, err := cfg.compile(formats)
	if err != nil {
		return Config{}, err
	}
	cfg.compiled = c
	return cfg, nil
}

// Formats is the format table cfg was compiled with: nil (the built-in
// formats alone) when cfg was not compiled or compiled with nil.
func (c Config) Formats() *Formats {
	if c.compiled == nil {
		return nil
	}
	return c.compiled.formats
}

// compile validates c against the format table fs and returns its compiled
// form (check fills it in). The schemas c already has compiled are reused.
func (c Config) compile(fs *Formats) (*compiledAgent, error) {
	out := &compiledAgent{formats: fs, format: c.format(), schemas: map[string]compiledSchema{}}
	if err := c.check(out); err != nil {
		return nil, err
	}
	if c.Output != nil {
		out.output, _ = schema.CompileOutput(c.Output.Schema) // checked by check
	}
	return out, nil
}

// formatSpec is c's format, from its compiled form or else looked up in
// the table c was compiled with (the built-ins when it was not).
func (c Config) formatSpec() (FormatSpec, bool) {
	if c.compiled != nil && c.compiled.format == c.format() {
		return c.compiled.spec, true
	}
	return c.Formats().Lookup(c.format())
}

// parse reads a reply in c's format. The helpers format under
// Policy.HelpersSourceText reads it with its switch (helpersOptions), which
// the format's FormatSpec, a function of the text and tools alone, cannot
// take.
func (c Config) parse(r ModelReply) (Parsed, error) {
	if o := c.helpersOptions(); o.SourceText {
		return parseHelpersWith(o, r.Text, c.tools())
	}
	spec, ok := c.formatSpec()
	if !ok {
		return Parsed{}, &ParseError{Format: c.format(), Msg: "unknown format"}
	}
	return spec.parse(c.format(), r, c.tools())
}

// argSchema is tool t's compiled argument schema: the one compiled with c
// when t's schema is still the one compiled, else compiled now.
func (c Config) argSchema(t Tool) (*argSchema, error) {
	if c.compiled != nil {
		if s, ok := c.compiled.schemas[t.Name]; ok && bytes.Equal(s.raw, t.Parameters) {
			return s.schema, nil
		}
	}
	return schema.Compile(t.Parameters)
}
