// Package server is `stepwise serve`: the HTTP API over a store (JSON under
// /v1, described by /openapi.json), a pool of workers that drive runnable
// runs by taking their leases, Server-Sent Events of each run's steps, and
// the run inspector, a page served by the same binary.
//
// A request never drives a run itself: it makes what it asks for durable
// (a new run, answers to a pause, a resume, a fork) and leaves the run
// runnable; a worker, in this process or in another server on the same
// database, claims it (store.Runs.Claim) and drives it. A new run created
// while one of this server's workers waits is the exception: it is stored
// held by this server, in the same write, and handed to that worker
// (docs/adr/0037-runs-created-held.md). So several servers on one
// PostgreSQL share the work through the database alone, and a server
// killed with SIGKILL loses nothing: its runs' leases expire and other
// workers take them over. See docs/adr/0014-service.md.
//
// A run is a conversation (docs/adr/0032-conversations.md): POST
// /v1/runs/{id}/messages stores the user's next message in the run's inbox
// (shell.Pool.Message) and leaves the run to the workers, like every other
// request; a worker folds it in as a step of its own. GET
// /v1/runs/{id}/messages lists the conversation in the OpenAI chat format,
// and POST /v1/runs starts a run from one.
//
// Steps are numbered and counted as core's doc says ("Steps"): by seq from
// 0, the start; a run's "steps" is its last seq. GET /v1/runs/{id}/steps
// and the event stream give the same step for the same seq: the event
// "step" with id N carries step N, that is the result step N folded in
// (the answer to the request of step N-1) and the action step N decided.
// The answer to step N's request arrives with event N+1; the live events
// of a model call in flight ("calling", "delta", "retry", ids "N" and
// "N.k") belong to the step that asked for it, N.
package server
