package storetest

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Harness opens the stores of one backend for the suite. Open, Reopen,
// Corrupt and Size are required. The fields after them are optional hooks
// into the backend's storage, each documented: a case that needs a hook
// the harness leaves nil skips, naming the hook; an assertion that needs
// one is left out. Our backends set them all.
type Harness struct {
	// Open opens a fresh, empty store (a database or schema of its own)
	// whose clock is now (nil: the store's own). The suite closes it.
	Open func(t *testing.T, now func() time.Time) store.Store
	// Reopen opens another store on the database s is on, as another
	// process would, with the clock now. The suite closes it.
	Reopen func(t *testing.T, s store.Store, now func() time.Time) store.Store
	// Corrupt flips one byte of a stored record of run runID, in place,
	// without touching its checksum: what is "step" (the body of step n),
	// "segment" (the body of the segment starting at step n) or "intent"
	// (the arguments of the intents of step n).
	Corrupt func(t *testing.T, s store.Store, runID, what string, n int)
	// Size is how many bytes the store holds for the run's steps: the
	// bodies of its step rows and segments, and the tool lists they refer
	// to (each counted once).
	Size func(t *testing.T, s store.Store, runID string) int64

	// Damage, optional, damages a stored record in place, as a failing
	// disk or a hand editing the database would (see Damage): the
	// corruption cases need it.
	Damage func(t *testing.T, s store.Store, d Damage)
	// Dump, optional, is every row of the store's database in a stable
	// order, blobs as their bytes (so that text stored in them shows):
	// the fencing cases compare it before and after refused writes, and
	// the tool cache's looks for arguments in it.
	Dump func(t *testing.T, s store.Store) []byte
	// Segments, optional, is how many segments (copies of the messages of
	// a range of steps, codec.SegmentSteps long) the store holds for run
	// runID; the round-trip and export cases check the count.
	Segments func(t *testing.T, s store.Store, runID string) int
	// Remembers, optional, reports whether s holds run runID's tail (its
	// last step) in memory, so that its next checkpoint does not read it
	// back: the cases about a stale tail check that they take that path.
	Remembers func(s store.Store, runID string) bool
	// Idle, optional, reports whether s holds no write half done (no
	// transaction left open on its write connection); the suite checks it
	// after writes that fail.
	Idle func(t *testing.T, s store.Store) bool
	// LogCache, optional, opens another store on the database s is on
	// whose cache of decoded message logs (if the backend keeps one)
	// holds at most budget bytes: the backend's default when 0, none
	// when negative. It returns the store and a function reporting what
	// its cache holds. The suite closes the store. The log cache cases
	// need it.
	LogCache func(t *testing.T, s store.Store, budget int64) (store.Store, func() CacheStats)
}

// Run runs the conformance suite against the stores h opens.
func Run(t *testing.T, h Harness) {
	if h.Open == nil || h.Reopen == nil || h.Corrupt == nil || h.Size == nil {
		t.Fatal("storetest: Harness.Open, Reopen, Corrupt and Size are required")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// cases are the suite's cases, run in this order as subtests of Run.
var cases = []struct {
	name string
	fn   func(*testing.T, Harness)
}{
	{"Checkpoints", testCheckpoints},
	{"CheckpointRefusals", testCheckpointRefusals},
	{"CheckpointCancelled", testCheckpointCancelled},
	{"RoundTrip", testRoundTrip},
	{"RoundTripSegments", testRoundTripSegments},
	{"StepsFrom", testStepsFrom},
	{"StatusTransitions", testStatusTransitions},
	{"StallAttempts", testStallAttempts},
	{"StalledAndAgentChanges", testStalledAndAgentChanges},
	{"Leases", testLeases},
	{"Fencing", testFencing},
	{"FenceHoldsAgainstAcquire", testFenceHoldsAgainstAcquire},
	{"OneClock", testOneClock},
	{"ForcedTakeOver", testForcedTakeOver},
	{"AnotherWriter", testAnotherWriter},
	{"StaleTailSameLease", testStaleTailSameLease},
	{"Intents", testIntents},
	{"IntentsReopened", testIntentsReopened},
	{"AgentChanges", testAgentChanges},
	{"StoredOnce", testStoredOnce},
	{"ExportImport", testExportImport},
	{"ExportImportSteps", testExportImportSteps},
	{"ImportValidates", testImportValidates},
	{"FreeText", testFreeText},
	{"ListRuns", testListRuns},
	{"ListRunsCursor", testListRunsCursor},
	{"ListRunsWithoutConfig", testListRunsWithoutConfig},
	{"Memory", testMemory},
	{"MemoryCreate", testMemoryCreate},
	{"MemoryConcurrentCreate", testMemoryConcurrentCreate},
	{"MemoryTraverse", testMemoryTraverse},
	{"MemorySearch", testMemorySearch},
	{"Corruption", testCorruption},
	{"ConcurrentRuns", testConcurrentRuns},
	{"RacingAcquirers", testRacingAcquirers},
	{"Claim", testClaim},
	{"CancelRequests", testCancelRequests},
	{"InboxPost", testInboxPost},
	{"InboxDelivery", testInboxDelivery},
	{"InboxCompleted", testInboxCompleted},
	{"ReleasingCheckpoint", testReleasingCheckpoint},
	{"InboxRacingPosts", testInboxRacingPosts},
	{"InboxCorrupt", testInboxCorrupt},
	{"Turns", testTurns},
	{"WriteSize", testWriteSize},
	{"ToolCache", testToolCache},
	{"Idempotency", testIdempotency},
	{"ToolCacheCorrupt", testToolCacheCorrupt},
	{"LogCacheSameBytes", testLogCacheSameBytes},
	{"LogCacheAppend", testLogCacheAppend},
	{"LogCacheBudget", testLogCacheBudget},
	{"LogCacheConcurrent", testLogCacheConcurrent},
}

// Clock is a clock the suite moves by hand; safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock is a clock at a fixed moment.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	return c
}

// Now reads the clock; each reading moves it on by a microsecond, so that
// times are distinct.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Add(1000)).UTC() }

// Add moves the clock on.
func (c *Clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

func open(t *testing.T, h Harness, now func() time.Time) store.Store {
	t.Helper()
	s := h.Open(t, now)
	t.Cleanup(func() { s.Close() })
	return s
}

func reopen(t *testing.T, h Harness, s store.Store, now func() time.Time) store.Store {
	t.Helper()
	o := h.Reopen(t, s, now)
	t.Cleanup(func() { o.Close() })
	return o
}

// create makes synthetic run id held by owner for an hour, and returns its
// lease and generator.
func create(t *testing.T, s store.Store, id string, tl []core.Tool) (store.Lease, *synth) {
	t.Helper()
	l, err := s.CreateRun(context.Background(), store.NewRun{ID: id, Agent: "agent", ConfigHash: "h", Config: []byte(`{"v":1}`),
		Input: "question " + id, Initial: initial(id), Owner: "test/1/" + id, LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l, newSynth(id, tl)
}

// fataler is what encoded and must need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func must(t fataler, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// encoded is an action's and a state's encoding, to compare records byte
// for byte.
func encoded(t fataler, a core.Action, st core.State, r core.Result) string {
	t.Helper()
	var b bytes.Buffer
	if a != nil {
		ab, err := core.EncodeAction(a)
		must(t, err)
		b.Write(ab)
	}
	sb, err := core.EncodeState(st)
	must(t, err)
	b.Write(sb)
	if r != nil {
		rb, err := core.EncodeResult(r)
		must(t, err)
		b.Write(rb)
	}
	return b.String()
}
