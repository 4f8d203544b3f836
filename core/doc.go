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
// # Tool-call formats
//
// Config.Format selects how the model writes tool calls: native, xml, json,
// fenced, strict, helpers, auto (see Parse), or a format registered from
// outside core. A program adds one by registering it, from an init function
// of the package that defines it, under a name:
//
//	func init() {
//		if err := core.RegisterFormat("lines", core.CustomFormat{
//			Parse:      parseLines,      // reply text -> calls (raw JSON arguments) and message
//			RenderCall: renderLineCall,  // one call as a reply Parse reads back
//			// Docs and RenderResults are optional.
//		}); err != nil {
//			panic(err)
//		}
//	}
//
// A Config refers to the format by name only, so it stays plain data: the
// name is stored with a run, and a program that runs, resumes or replays it
// without having registered the format is refused at Validate and Start,
// naming the format. A name never changes meaning once registered. The
// format's functions run inside Step and Resume and must be pure like the
// built-in parsers; test them as the built-ins are tested, with coretest:
//
//	rapid.Check(t, func(t *rapid.T) {
//		cfg := coretest.Configs("lines").Draw(t, "config")
//		coretest.CheckRun(t, cfg, "input")
//	})
//
// ToolDocs puts each format's tool documentation in the system prompt;
// ToolParamDocs lists a tool's parameters the way the fenced format shows
// them, for a custom format's Docs.
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
package core
