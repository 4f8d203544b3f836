package sqlite

import (
	"bytes"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// openTest opens a fresh store in a temporary directory, closed at the end
// of the test, with a clock that ticks one millisecond per reading.
func openTest(t testing.TB) *SQLite {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "test.db"), &Options{Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fakeClock returns a deterministic clock that advances one millisecond
// per reading; safe for concurrent use.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func encState(t tb, st core.State) []byte {
	t.Helper()
	b, err := core.EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encAction(t tb, a core.Action) []byte {
	t.Helper()
	if a == nil {
		return nil
	}
	b, err := core.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encResult(t tb, r core.Result) []byte {
	t.Helper()
	if r == nil {
		return nil
	}
	b, err := core.EncodeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// sameStep checks that a loaded record equals, byte for byte, what was saved.
func sameStep(t tb, rec store.StepRecord, seq int, st core.State, a core.Action, r core.Result) {
	t.Helper()
	if rec.Seq != seq {
		t.Fatalf("seq %d, want %d", rec.Seq, seq)
	}
	if got, want := encState(t, rec.State), encState(t, st); !bytes.Equal(got, want) {
		t.Fatalf("step %d: state differs:\n got %x\nwant %x", seq, got, want)
	}
	if got, want := encAction(t, rec.Action), encAction(t, a); !bytes.Equal(got, want) {
		t.Fatalf("step %d: action differs:\n got %x\nwant %x", seq, got, want)
	}
	if a != nil && !bytes.Equal(encState(t, rec.Action.Next()), encState(t, st)) {
		t.Fatalf("step %d: the action's Next() is not the state", seq)
	}
	if got, want := encResult(t, rec.Result), encResult(t, r); !bytes.Equal(got, want) {
		t.Fatalf("step %d: result differs:\n got %x\nwant %x", seq, got, want)
	}
}

// leaseOf is storetest.LeaseOf.
func leaseOf(t tb, s *SQLite, id string) store.Lease { t.Helper(); return storetest.LeaseOf(t, s, id) }

// The synthetic runs of storetest's kit.
var (
	baseState  = storetest.BaseState
	withAction = storetest.WithAction
	turnStep   = storetest.TurnStep
	newRun     = storetest.NewRun
)
