// Package storetest is the conformance suite of the storage contract
// (package store): every store, ours (store/sqlite, store/postgres) and a
// third party's, passes it. Use it from the store's tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{Open: ..., Reopen: ..., Corrupt: ..., Size: ...})
//	}
//
// It checks, against the real store: checkpoint order and fencing, leases
// and take-over, intents and outcomes, pause/resume status transitions,
// agent changes, export/import byte identity, listing and its cursor,
// memory search/create/traverse, the tool cache (store.ToolCache) and its
// expiry, checksums catching corruption,
// concurrency (50 concurrent runs; 8 racing acquirers of one run, one
// wins), and that what a step writes does not grow with the run or with
// the agent's tool list. The runs it writes are synthetic but valid: each
// state and action is one core could have produced.
package storetest
