// Package server is `stepwise serve`: the HTTP API over a store (JSON under
// /v1, described by /openapi.json), a pool of workers that drive runnable
// runs by taking their leases, Server-Sent Events of each run's steps, and
// the run inspector, a page served by the same binary.
//
// A request never drives a run itself: it makes what it asks for durable
// (a new run, answers to a pause, a resume, a fork) and leaves the run
// runnable; a worker, in this process or in another server on the same
// database, claims it (store.Runs.Claim) and drives it. So several servers
// on one PostgreSQL share the work through the database alone, and a
// server killed with SIGKILL loses nothing: its runs' leases expire and
// other workers take them over. See docs/adr/0014-service.md.
package server
