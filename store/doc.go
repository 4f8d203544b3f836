// Package store is the storage contract of stepwise: the domain types
// (runs, steps, checkpoints, intents, leases, statuses, memory, the tool
// cache), the Store interface the shell and the CLI use (Runs and Memory),
// and its errors, matched with errors.Is. It has no driver and needs no
// cgo; each database is a subpackage that implements Store:
//
//   - store/sqlite: a file, through mattn/go-sqlite3 (cgo);
//   - store/postgres: a PostgreSQL schema, through pgx;
//   - store/storetest: the conformance suite every backend passes;
//   - store/runfile: a run's export file;
//   - store/internal/codec: the row and segment layout, checksums, caches
//     and export format both of ours share, so that a run exports to the
//     same bytes from either.
//
// # Adding a backend
//
// A backend is a package of its own (store/<name>, or anywhere outside
// this module) that implements Store (and store.ToolCache), and these
// test files:
//
//   - conformance_test.go: TestConformance calls storetest.Run with the
//     backend's storetest.Harness (Open, Reopen, Corrupt and Size, plus the
//     optional hooks it can offer). That one call runs every
//     backend-generic test: checkpoints, leases and fencing, intents,
//     export and import, memory, corruption, concurrency, claims, the tool
//     cache. Nothing needs copying from another backend.
//   - tests of what is its own only: its migrations, its connection or
//     file handling, its write path (round trips, locks, crashes).
//
// A backend that can import another (store/postgres imports store/sqlite)
// may also call storetest.Across to check that runs export across them
// byte for byte and memory ranks alike. The CLI picks the backend from
// --db (cmd/stepwise/db.go).
package store
