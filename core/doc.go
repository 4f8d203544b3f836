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
// A State is a value, but its message log is shared between a state and the
// states derived from it (Resume only ever appends). Resuming one State value
// several times (a fork) is supported; doing so from several goroutines at
// once is not, exactly like raft's RawNode.
package core
