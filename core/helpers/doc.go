// Package helpers is the language of the helpers tool-call format:
// Python-style statements in <helpers>...</helpers> blocks (tool calls,
// assignments, literals, names, x[key], a + b, f-strings), parsed and then
// interpreted statement by statement (ADR 0016). The rules the model reads
// are in the core's package doc ("The helpers format").
//
// The contract:
//
//   - Parse reads a reply's blocks, given the agent's tools as plain data
//     (Tool: a name and its parameter schema, whose properties name
//     positional arguments in the order written: ParamOrder). A program of
//     literal calls parses to Calls, byte for byte what the format always
//     gave; any other to a Program. A problem is an *Error with its line
//     and column, in words the model can correct from.
//   - Program.Check finds, before anything runs, the errors that do not
//     depend on a result; Program.Run runs the program from its start over
//     the results of the calls it made so far and returns the calls to
//     make next, or the statement it stopped at. Both ask a Host, which the
//     core supplies, whether a name is a tool and to check each call.
//   - Options switch the parser: Options.SourceText passes an argument
//     that is a Python expression outside the subset as a str holding its
//     source text, with a warning (Parsed.Warnings, Program.Warnings),
//     instead of an *Error; the zero Options read the subset alone.
//   - A Program is never changed by running it; all a run depends on is
//     its text, the Host's answers and the results passed in, so the same
//     inputs give the same calls, byte for byte.
//
// The package is pure: no I/O, no clock, no randomness, no goroutines, no
// package-level state that changes. It imports nothing of stepwise but
// core/schema (JSON values, as call arguments are read and written).
package helpers
