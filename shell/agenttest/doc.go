// Package agenttest tests agents like code: it replays recorded runs
// against an agent, many at once, and checks golden runs against written
// expectations, from `go test` or from the CLI (`stepwise replay --all`,
// `stepwise replay --runs DIR`, `stepwise test DIR`).
//
// Replay re-drives the core over each recording with the recorded results
// (no model, no tool, no tokens) and reports for each run: identical;
// diverged at step N (the recorded and the replayed decision); or could
// not be replayed, and why. Recordings come from a store (FromStore) or
// from a directory of export files, read with no database (FromDir, via
// store/runfile).
//
// # Golden runs
//
// A directory of golden runs holds export files (`stepwise export RUN -o
// DIR/NAME.json`), each with an optional NAME.expect.toml beside it:
//
//	# What NAME.json must show. Every key is optional.
//	agent = "../agents/analyst.toml"  # replay against this agent file, relative
//	                                  # to this file (default: the agent the run
//	                                  # recorded, with its changes)
//	diverges_at = 6                   # the replay must diverge at this step (a
//	                                  # recording kept to show a change is caught);
//	                                  # without it the replay must be identical
//	status = "completed"              # the run's final status
//	no_failure = true                 # the run neither failed nor was cancelled
//	answer = "42"                     # the final answer, exactly
//	answer_contains = ["107 EUR"]     # texts the final answer contains
//	tools_used = ["read_file", "add"] # the tools used, exactly and in order
//	max_steps = 8                     # at most this many steps
//
// A run without an expectation file must replay identically. The
// assertions are about the recording, and an identical replay shows that
// the agent still does what it recorded; so naming the agent file makes
// the test fail as soon as a change to the file changes a decision. Unknown
// keys and values of the wrong type are errors naming the file and line.
//
// From a Go test:
//
//	func TestGoldenRuns(t *testing.T) {
//		agenttest.Run(t, "testdata/runs")
//	}
//
// A failure names the run's file and the assertion, for example
// "testdata/runs/multi-tool.json: answer_contains \"108 EUR\": the answer
// is \"The desk lamp and the monitor arm cost about 107 EUR together.\"".
package agenttest
