// Package agentprops is an example of property-testing an agent file of
// your own with core/coretest: no model, no tool, no network.
//
// agentprops_test.go loads support.toml, the agent under test, and drives
// thousands of runs of it with replies and tool results that
// pgregory.net/rapid generates (coretest.ResultFor: final answers, stuck
// and empty replies, valid and invalid calls, unknown tools, repeated
// calls, failing tools, cancellations). At every step it checks the
// invariants a user of this agent relies on:
//
//   - every tool call the model made is answered exactly once in what the
//     model reads next (OpenAI-compatible endpoints refuse a conversation
//     in which a tool call has no answer, or two), whatever the model
//     sent: too many calls, invalid ones, unknown tools, repeated ids;
//   - the calls the shell is asked to run have unique, non-empty ids;
//   - the agent's limits hold: at most max_calls_per_turn calls are run
//     per turn, and a run ends within max_steps steps;
//   - the core never panics or returns an error on a state it produced,
//     and every state passes coretest.CheckState (it survives a CBOR round
//     trip byte for byte, and more).
//
// Copy the test next to your own agent file, point it there, and add the
// invariants of your domain. rapid shrinks a failure to a small run and
// saves it under testdata/rapid/ to be replayed first next time; run
// `go test ./examples/agentprops -rapid.checks=10000` for a longer search.
package agentprops
