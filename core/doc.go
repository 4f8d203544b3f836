// Package core is the functional core of stepwise: a pure, synchronous state
// machine that decides what an LLM agent does next.
//
// The contract is three functions:
//
//	Start(cfg, req)     -> State   the first state of a run
//	Step(cfg, st)       -> Action  decide what happens next
//	Resume(cfg, st, r)  -> State   fold in the outcome of that action
//
// core performs no I/O: it reads no clock, draws no random numbers, starts no
// goroutines and imports nothing from shell/, store/ or cmd/ (a test enforces
// it). Everything the outside world does (model replies, tool outputs, memory
// hits) comes back as a typed Result. The same inputs always give the same
// outputs, byte for byte, so runs can be checkpointed, replayed and forked.
//
// Ordering contract (the shell's side): every Action except Complete and Fail
// carries the continuation State, which already records the pending request.
// That state must be saved to stable storage BEFORE the request is performed.
// After a crash, Step on the saved state returns the same request again.
//
// Step is idempotent: when the state already has a pending request, Step
// re-issues it without changing anything. Resume refuses a result that does
// not fit the pending request with one of the documented sentinel errors and
// leaves the state untouched.
//
// # Steps
//
// A step is one checkpoint in a run's log, numbered by its seq from 0 with
// no gaps. Step 0 is the start: the state Start made, with no action and no
// result. Every later step N holds, in this order, the result it folded in
// with Resume (the outcome of the request made at the step before it; none
// at step 1, nor when the same state was stepped again), the action Step
// decided from there, and that action's state, checkpointed before its
// request is performed. So the result of step N's request belongs to the
// step after it (N+1 in an unbroken run): it is stored, listed, exported and
// streamed there, and a replay that decides differently because of it
// diverges there. What performing step N's request cost (its time, the
// tokens of its reply) is measured when that result comes back.
//
// A run's number of steps is the seq of its last step: the steps taken since
// the start, which is not counted. Every command, route and event numbers
// and counts this way: stepwise show (and show --step N), ls, stats, replay
// ("diverges at step N"), fork --at N, the HTTP API (a run's "steps" and
// "counters.steps", a step's "seq", GET /v1/runs/{id}/steps, fork's "at", a
// fork's parent "step"), the event stream (an event with id N carries step
// N, whose result is the outcome of the request before it) and the run
// inspector. An export file holds the records of steps 0 to N, and its head
// counts records: "steps" is N+1 there.
//
// Counters.Steps is not a step number: it counts the requests the run has
// made (model calls, tool batches, memory requests, pauses for external
// calls), which is what Limits.MaxSteps bounds. The step that ends a run and
// a request issued again after a restart are not counted, and a fork goes on
// from its parent's count. DescribeState shows it as requests=, the HTTP API
// as counters.requests.
//
// # Layout
//
// core holds the state machine: State, Action, Result, Start/Step/Resume,
// the formats and the policies. Ideas that stand on their own are
// subpackages, each pure like core, each importing nothing of stepwise
// above it (core imports them, never the other way; the purity test checks
// every package under core/):
//
//   - core/schema: the JSON Schema validator of tool arguments and outputs,
//     and the JSON values it reads and writes (DecodeArgs, Canonical).
//   - core/helpers: the helpers language, parsed and interpreted over a
//     Host that core supplies (helpers_adapter.go, helpers_turn.go).
//   - core/internal/wire: the canonical CBOR primitives the encoders of
//     core's types (encode_fast.go) are built on.
//   - core/internal/jsontext: the JSON strings and excerpts that core and
//     core/helpers write by hand, the same bytes in both.
//   - core/coretest: rapid generators and invariant checks, for tests.
//
// # Tool-call formats
//
// Config.Format selects how the model writes tool calls: native, xml, json,
// fenced, strict, helpers, auto (see Parse), or a format a program adds.
// Every format is a FormatSpec (a parser, RenderCall, Docs, RenderResults)
// in a table, Formats. Each built-in format is one file that declares its
// spec (format_xml.go, ..., parse_auto.go) and one line of the built-in
// table (formats.go); no other code names a format. A program adds its own
// to a table of its own, a value that never changes (With returns a new
// one), and compiles its agents with it:
//
//	var formats *core.Formats // nil: the built-in formats alone
//	formats, err := formats.With("lines", core.FormatSpec{
//		Parse:      parseLines,     // reply text -> calls (raw JSON arguments) and message
//		RenderCall: renderLineCall, // one call as a reply Parse reads back
//		// Docs and RenderResults are optional.
//	})
//	...
//	cfg, err = core.Compile(cfg, formats) // cfg.Format = "lines"
//
// (shell.Registry.Format does this for the agents a Registry builds.) A
// Config refers to the format by name only, so it stays plain data: the
// name is stored with a run, and a config that is not compiled with a table
// holding the format is refused at Validate, Compile and Start (so at
// resume and replay too), naming the format. The format's functions run
// inside Step and Resume and must be pure like the built-in parsers; test
// them as the built-ins are tested, with coretest:
//
//	rapid.Check(t, func(t *rapid.T) {
//		cfg := coretest.ConfigsWith(formats, "lines").Draw(t, "config")
//		coretest.CheckRun(t, cfg, "input")
//	})
//
// ToolDocs puts each format's tool documentation in the system prompt;
// ToolParamDocs lists a tool's parameters the way the fenced format shows
// them, for a custom format's Docs.
//
// # Compiling an agent
//
// Compile validates a Config and works out once what every call of Start,
// Step and Resume would otherwise work out again: its format, looked up in
// a format table, and each tool's argument schema, compiled. The result is
// the same plain data (the compiled form is an unexported field, never
// encoded), so it is passed to Start, Step and Resume as before; the shell
// compiles each agent once. A Config that is not compiled works the same,
// only slower, and can name only a built-in format. core keeps no state
// between calls: no cache, no registry, and defaults (DefaultConfig,
// DefaultLimits, DefaultStuckPhrases, CollaborationStuckPhrases) that are
// functions, so no package can change them for another.
//
// # Results the model reads
//
// A tool's output is cut to its byte cap (Tool.MaxResultBytes,
// Limits.ToolResultBytes), or, with a Summary (Config.Summary, Tool.Summary),
// a list-like JSON result is shortened to its first items, each cut, the
// whole under a hard cap. The state records what the model reads; the
// shell's store keeps the full ToolResults given to Resume, so a replay
// yields the same bytes. In the json and strict formats a failed call reads
// {"ok": false, "error": ...}; with a summary, the strict format writes each
// result as "Tool N [name]: summary".
//
// Config.Warnings lists what Validate accepts but an author should fix,
// such as a schema default that does not fit its own schema (it is ignored).
//
// A State is a value, but its message log is shared between a state and the
// states derived from it (Resume only ever appends). Resuming one State value
// several times (a fork) is supported; doing so from several goroutines at
// once is not, exactly like raft's RawNode.
//
// # The calls of a turn
//
// The calls of one model turn run in the model's order, also when internal
// and external calls are mixed: from the first call not yet run, the calls
// of the same kind that follow it form the next request (a RequestToolCalls
// for internal and MCP calls, concurrent with Policy.Parallel; a
// RequestExternalToolCalls pause; a memory call alone). Internal calls
// written before an external one run before the pause; those written after
// it run once its results are in. Each pause is answered with exactly its
// own calls (unknown, duplicate and missing ids are refused). Each call
// carries Raw, the text it was parsed from ("" for a native call).
//
// # The helpers format
//
// An agent with format "helpers" writes Python-style statements in
// <helpers>...</helpers> blocks; the statements of all the blocks of a
// reply form one program, which the core runs statement by statement (ADR
// 0016). ToolDocs tells the model the rules below. Statements, one per line
// or separated by ';':
//
//	tool(arg=value, ...)         a tool call (positional arguments follow the schema's order)
//	name = tool(arg=value, ...)  a tool call whose result is bound to name
//	name = value                 an assignment
//
// Values are literals (strings with r and f prefixes, numbers, True, False,
// None, lists, tuples, dicts with string keys), names bound by earlier
// statements, x[key] (a dict's member, a list's item; negative indexes
// count from the end), a + b (two strings joined, two numbers added) and
// f-strings; **value passes a dict's members as arguments. Nothing else:
// no nested calls, no attributes or methods, no other operators, no
// conditions, loops, comprehensions, slices, imports or definitions; each
// is refused, before anything runs, with a correction naming it and its
// line and column.
//
// Values are JSON values. A tool's result is its output text, a str: passed
// as an argument, joined with + or written in an f-string it is that text;
// a subscript (or **) reads it as JSON, decoded as call arguments are (one
// value, nothing after it, numbers exactly as written). The result read is
// the one the model reads, cut to the tool's max_result_bytes. Integers stay
// integers of any size; a + b of numbers is exact (integers as integers; with
// a decimal, exact in decimal: 0.1 + 0.2 is 0.3); an f-string writes a
// number exactly as its JSON or literal wrote it (1.50 stays 1.50), True,
// False and None as Python does, and a list or dict as compact JSON with
// sorted keys. A value may not exceed 1 MiB.
//
// A block of calls whose arguments use no names gives exactly the calls
// the format always gave, in one request. Otherwise each call becomes a
// request when the program reaches it, with the calls after it whose
// arguments do not wait for a result; the run pauses where an external
// result is needed, and goes on when it is in. A statement that cannot be
// computed (a subscript on a result that is not JSON, a missing key, + on a
// str and a number, computed arguments the schema refuses, a name bound to a
// call that failed) stops the block there: the model reads the results of
// the calls made and the error, naming the statement and its line, in a
// <helpers_error> block; nothing after it runs, and no correction is
// counted. Errors that do not depend on a result are found before anything
// runs and are corrections. The program's state is the turn's calls and
// results (Turn.Program locates its text); the bindings are computed again
// from them, so a run checkpointed between two calls resumes, replays and
// forks exactly.
//
// Policy.HelpersSourceText (on in the agent file's sabre preset) follows
// the SABRE design, which serializes an expression it cannot evaluate as a
// string: with format helpers, a call's argument (name=value or positional)
// that is a Python expression outside the subset is passed as a str holding
// its source text, as written and trimmed, and the call goes on to the
// validator as any other (a schema that wants a number refuses the str with
// the usual correction). That is a value the parser refuses (an undefined
// name, a function that is not a tool, attributes and methods, other
// operators, comparisons, conditions, comprehensions, lambdas, slices) or
// one that cannot be computed before any result is in ("x"["a"], or n + 1
// where n = "x"). Each such argument adds a warning to the turn's
// ParseMeta: "line 2: lookup(q=...): the expression len(x) is outside the
// helpers subset; passed as its source text". Still corrections: text that
// is not a Python expression (unbalanced brackets, a string not closed), a
// tool called inside an argument or named as a value, true/false/null,
// the size and nesting bounds, ** and *args, assignments; and a value that
// waits for a result runs, and stops the block, as above.
package core
