// Package storetest is the conformance suite of the storage contract
// (package store): every store, ours (store/sqlite, store/postgres) and a
// third party's, passes it, and it holds every test that is not about one
// backend's storage. A backend runs the whole suite with one call, from a
// test file of its own package (so that its hooks may read unexported
// fields):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{Open: ..., Reopen: ..., Corrupt: ..., Size: ...})
//	}
//
// Open, Reopen, Corrupt and Size are required. The optional hooks
// (Harness.Damage, Dump, Segments, Remembers, Idle, LogCache) reach into
// the backend's storage for the cases that damage records in place,
// compare raw rows, check which write path a case took or size a cache; a case whose hook is nil
// skips, naming it, and an assertion whose hook is nil is left out, so a
// new backend can start with the four required functions and add hooks
// as it goes. store/sqlite/conformance_test.go and
// store/postgres/conformance_test.go set every hook but one (PostgreSQL
// has no Idle: it holds no transaction between calls).
//
// The cases are subtests of Run, one per behaviour: checkpoints (order,
// refusals, cancellation, round trips byte for byte through generated and
// segmented runs, StepsFrom), statuses and agent changes, leases (their
// expiry on one clock: contenders skewed by hours neither take a live run
// nor wait past a dead holder's TTL; an operator's forced take-over),
// fencing of every write and its race with a take-over, a second writer
// and a stale tail, intents and outcomes, export/import byte identity and
// validation, free text (NUL, invalid UTF-8), listing and its cursor,
// memory (create, traverse, search ranking, concurrent creates),
// corruption of steps, segments, intents, agent changes, tool lists,
// the tool cache and inbox messages, concurrency (50 runs through three stores; 8 racing
// acquirers), claims, cancel requests, a run's inbox (posted messages,
// their numbers under racing posts, their delivery by a checkpoint, a
// completed run woken by a message, a corrupt message) and its turns, the
// tool cache and its expiry, and that what a step writes does not grow
// with the run or with the agent's tool list, and that loads served by a
// cache of decoded logs return the same bytes as without one, are not
// changed by a caller appending to a state, stay within the cache's budget
// and hold under a concurrent writer. The runs it writes are
// synthetic but valid: each state and action is one core could have
// produced (the inbox cases drive core itself).
//
// Across compares two backends' stores: export round trips between them
// byte for byte, and the same memory search rankings.
//
// The round-trip and corruption cases cross the segment length of
// store/internal/codec (codec.SegmentSteps), which both our backends
// share; a backend that keeps no segments leaves Segments nil, and its
// Damage skips (t.Skip, saying why) the kinds of damage its storage has
// no record for.
package storetest
