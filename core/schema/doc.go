// Package schema checks JSON values against the JSON Schema subset stepwise
// supports for tool arguments and outputs (docs/adr/0003-schema-validation.md),
// and holds the JSON value model the checks run over: values as a
// json.Decoder with UseNumber gives them (map[string]any, []any, string,
// json.Number, bool, nil).
//
// The contract:
//
//   - Compile turns a tool's parameter schema into a *Schema, naming every
//     problem; a default that does not fit is dropped, not refused
//     (Warnings, Dropped). Validate checks and normalizes a call's
//     arguments: types exact (no coercion), defaults injected, unknown
//     arguments dropped or refused by policy; its error lists every
//     problem by argument path, in words a model can correct from.
//   - CompileOutput and Output.Check do the same for a tool's output.
//   - DecodeArgs reads call arguments (a JSON object, exact numbers, no key
//     twice); DecodeValue reads any one JSON value the same way.
//   - Canonical writes a value as compact JSON with sorted keys and no HTML
//     escaping: the same value always gives the same bytes.
//
// Everything here is pure: no I/O, no clock, no randomness, no goroutines,
// no package-level state that changes. A compiled Schema or Output is
// immutable and safe for concurrent use. The package imports nothing of
// stepwise; core adapts it to its Tool, ToolCall and Config.
package schema
