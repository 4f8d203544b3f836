// Package coretest property-tests agents built on core: rapid generators for
// configs, model replies and tool results, and invariant checks that hold for
// every reachable state.
//
// Use it to test your own agent config with no network and no mocks:
//
//	func TestMyAgent(t *testing.T) {
//		cfg := loadMyConfig()
//		rapid.Check(t, func(t *rapid.T) {
//			coretest.CheckRun(t, cfg, "some input")
//		})
//	}
//
// Configs generates plain configs in the built-in formats; ConfigsWith
// generates configs compiled (core.Compile) with a format table, for an
// agent in a format of your own.
//
// CheckRun drives one run to its end with generated replies and results. At
// every step it checks that Step is idempotent, that Resume refuses results
// that do not fit (and changes nothing when it does), that the state survives
// a CBOR round trip byte for byte (a crash and restore), that the invariants of
// CheckState hold, and that the run ends within its step limit.
package coretest
