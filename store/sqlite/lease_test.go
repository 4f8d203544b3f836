package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// manualClock is a clock the test moves by hand.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *manualClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *manualClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func openClock(t *testing.T, c *manualClock) *SQLite {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "lease.db"), &Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLeaseAcquireRenewReleaseTakeOver(t *testing.T) {
	clock := newManualClock()
	s := openClock(t, clock)
	ctx := context.Background()
	st := baseState("q", []core.Message{{Role: core.RoleUser, Content: "q"}})
	a, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: st, Owner: "hostA/1/aa", LeaseTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if a.Token != 1 || a.Owner != "hostA/1/aa" || !a.Expires.Equal(clock.now().Add(10*time.Second)) {
		t.Fatalf("lease at creation: %+v", a)
	}
	info, _ := s.Run(ctx, "r")
	if info.Lease != a || info.Orphaned(clock.now()) {
		t.Fatalf("store.RunInfo.Lease %+v, want %+v (orphaned %v)", info.Lease, a, info.Orphaned(clock.now()))
	}

	// A live lease refuses everyone else, and is not re-entrant.
	for _, owner := range []string{"hostB/2/bb", "hostA/1/aa"} {
		_, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: owner, TTL: time.Second})
		busy, ok := errors.AsType[*store.BusyError](err)
		if !ok || !errors.Is(err, store.ErrBusy) || busy.Holder != a {
			t.Fatalf("%s acquiring a held run: %v", owner, err)
		}
	}
	// Renewal moves the expiry; the holder stays.
	clock.add(8 * time.Second)
	if a, err = s.Renew(ctx, a, 10*time.Second); err != nil || !a.Expires.Equal(clock.now().Add(10*time.Second)) {
		t.Fatalf("renew: %+v %v", a, err)
	}
	clock.add(9 * time.Second)
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: time.Second}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("acquire before the renewed expiry: %v", err)
	}
	// A take-over of exactly the holder works before the expiry (the
	// caller found it dead); a take-over naming another token does not.
	stale := a
	stale.Token = 7
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: time.Second, TakeOver: &stale}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("take-over of a wrong token: %v", err)
	}
	b, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostB/2/bb", TTL: 5 * time.Second, TakeOver: &a})
	if err != nil || b.Token != 2 {
		t.Fatalf("take-over: %+v %v", b, err)
	}
	// The old holder can no longer renew or release.
	if _, err := s.Renew(ctx, a, time.Second); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew of a lost lease: %v", err)
	}
	if err := s.Release(ctx, a); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release of a lost lease: %v", err)
	}
	// An expired lease is free for the next driver; its holder, if no one
	// took it, may still renew it.
	clock.add(6 * time.Second)
	if !info.Lease.Live(clock.now().Add(-time.Hour)) || b.Live(clock.now()) {
		t.Fatal("Live misreads expiry")
	}
	if b, err = s.Renew(ctx, b, 5*time.Second); err != nil {
		t.Fatalf("renew after expiry with no one else: %v", err)
	}
	if err := s.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	info, _ = s.Run(ctx, "r")
	if info.Lease.Owner != "" || !info.Orphaned(clock.now()) {
		t.Fatalf("after release: %+v", info.Lease)
	}
	c, err := s.Acquire(ctx, "r", store.LeaseRequest{Owner: "hostC/3/cc", TTL: time.Second})
	if err != nil || c.Token != 3 {
		t.Fatalf("acquire after release: %+v %v", c, err)
	}
	if _, err := s.Acquire(ctx, "nope", store.LeaseRequest{Owner: "x", TTL: time.Second}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquire of an unknown run: %v", err)
	}
	if _, err := s.Acquire(ctx, "r", store.LeaseRequest{TTL: time.Second}); err == nil {
		t.Fatal("acquire without an owner")
	}
}

// TestFencedWritesRefuseALostLease: once another driver took the run over,
// every write of the old holder is refused and writes nothing:
// checkpoint, intent, outcome, status, agent change, intent retraction.
func TestFencedWritesRefuseALostLease(t *testing.T) {
	clock := newManualClock()
	s := openClock(t, clock)
	ctx := context.Background()
	log := []core.Message{{Role: core.RoleSystem, Content: "s"}, {Role: core.RoleUser, Content: "q"}}
	old, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Initial: baseState("q", log), Owner: "a/1/x", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var cp store.Checkpoint
	cp, log = turnStep(log, 1, 10)
	if err := s.Checkpoint(ctx, old, cp); err != nil {
		t.Fatal(err)
	}
	call := core.ToolCall{ID: "c1", Name: "search", Args: []byte(`{"q":"x"}`)}
	if err := s.RecordIntent(ctx, old, 1, call); err != nil {
		t.Fatal(err)
	}
	// The holder is stopped past its lease; another driver (another
	// process: another store on the file) takes over. s still remembers
	// the run's tail, so its next checkpoint takes the hot path.
	clock.add(2 * time.Second)
	b, err := Open(s.Path(), &Options{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	next, err := b.Acquire(ctx, "r", store.LeaseRequest{Owner: "b/2/y", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.cache.Tail("r"); !ok {
		t.Fatal("s forgot the run's tail")
	}
	before := dump(t, s)
	cp2, _ := turnStep(log, 2, 10)
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"checkpoint (remembered tail)", func() error { return s.Checkpoint(ctx, old, cp2) }},
		{"intent", func() error { return s.RecordIntent(ctx, old, 1, core.ToolCall{ID: "c2", Name: "charge"}) }},
		{"outcome", func() error { return s.RecordOutcome(ctx, old, 1, core.ToolResult{CallID: "c1", Output: "x"}) }},
		{"status", func() error { return s.SetStatus(ctx, old, store.StatusChange{Status: store.StatusInterrupted}) }},
		{"agent change", func() error { return s.ChangeAgent(ctx, old, []byte("other")) }},
		{"retract", func() error { return s.RetractIntent(ctx, old, 1, "c1") }},
		{"checkpoint (read back)", func() error { return s.Checkpoint(ctx, old, cp2) }},
	} {
		if err := w.write(); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with a lost lease: %v, want store.ErrLeaseLost", w.name, err)
		}
	}
	if after := dump(t, s); !bytes.Equal(before, after) {
		t.Fatal("a write with a lost lease changed the database")
	}
	// The new holder writes.
	if err := b.Checkpoint(ctx, next, cp2); err != nil {
		t.Fatal(err)
	}
	if err := b.RecordOutcome(ctx, next, 1, core.ToolResult{CallID: "c1", Output: "done"}); err != nil {
		t.Fatal(err)
	}
	// A released lease fences nothing either, on the hot path included.
	if err := b.Release(ctx, next); err != nil {
		t.Fatal(err)
	}
	cp3, _ := turnStep(cp2.Action.Next().Messages, 3, 10)
	if err := b.Checkpoint(ctx, next, cp3); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("checkpoint with a released lease: %v", err)
	}
}

// dump is every row of the run tables, for comparing before and after.
func dump(t *testing.T, s *SQLite) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, q := range []string{
		`SELECT id, status, reason, lease_owner, lease_token, lease_expires_ns, updated_ns FROM runs ORDER BY rk`,
		`SELECT id, sum FROM steps ORDER BY id`,
		`SELECT ord, call_id, coalesce(result, x'') FROM intents ORDER BY ord`,
		`SELECT ord, config FROM agent_changes ORDER BY ord`,
	} {
		rows, err := s.r.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				fmt.Fprintf(&b, "%v|", v)
			}
			b.WriteByte('\n')
		}
		rows.Close()
	}
	return b.Bytes()
}

// TestRacingAcquirersOneWins: 8 drivers race for one run, over and over;
// exactly one gets the lease each time, the others store.ErrBusy.
func TestRacingAcquirersOneWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	stores := make([]*SQLite, 8)
	for i := range stores {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	ctx := context.Background()
	for round := range 50 {
		id := "run" + string(rune('a'+round%26)) + string(rune('a'+round/26))
		if _, err := stores[0].CreateRun(ctx, store.NewRun{ID: id, Agent: "x", Initial: baseState("q", nil)}); err != nil {
			t.Fatal(err)
		}
		var wins, busy atomic.Int32
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				_, err := s.Acquire(ctx, id, store.LeaseRequest{Owner: "host/" + string(rune('0'+i)) + "/n", TTL: time.Minute})
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrBusy):
					busy.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || busy.Load() != 7 {
			t.Fatalf("round %d: %d won, %d busy", round, wins.Load(), busy.Load())
		}
	}
}

func TestStalledStatusAndAgentChanges(t *testing.T) {
	clock := newManualClock()
	s := openClock(t, clock)
	ctx := context.Background()
	l, err := s.CreateRun(ctx, store.NewRun{ID: "r", Agent: "x", Config: []byte("v1"), Initial: baseState("q", nil), Owner: "a/1/x", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	retry := clock.now().Add(30 * time.Second)
	if err := s.SetStatus(ctx, l, store.StatusChange{Status: store.StatusStalled, Reason: "429 Too Many Requests", RetryAt: retry}); err != nil {
		t.Fatal(err)
	}
	info, _ := s.Run(ctx, "r")
	if info.Status != store.StatusStalled || info.Reason != "429 Too Many Requests" || !info.RetryAt.Equal(retry) || info.Orphaned(clock.now()) {
		t.Fatalf("stalled run: %+v", info)
	}
	if runs, _ := s.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusStalled, store.StatusInterrupted}}); len(runs) != 1 {
		t.Fatalf("filter by statuses: %d runs", len(runs))
	}
	if err := s.ChangeAgent(ctx, l, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	cp, _ := turnStep(nil, 1, 10)
	if err := s.Checkpoint(ctx, l, cp); err != nil {
		t.Fatal(err)
	}
	if err := s.ChangeAgent(ctx, l, []byte("v3")); err != nil {
		t.Fatal(err)
	}
	info, _ = s.Run(ctx, "r")
	changes, err := s.AgentChanges(ctx, "r")
	if err != nil || string(info.Config) != "v3" || len(changes) != 2 || changes[0].Seq != 0 || string(changes[0].Config) != "v2" || changes[1].Seq != 1 {
		t.Fatalf("config %q, changes %+v, %v", info.Config, changes, err)
	}
	if info.Status != store.StatusRunning || !info.RetryAt.IsZero() {
		t.Fatalf("a checkpoint after a stall: %+v", info)
	}
	// Export and import carry the changes, byte for byte.
	var first, again bytes.Buffer
	if err := s.Export(ctx, "r", &first); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(first.Bytes(), []byte(`"agent_changes":[{"seq":0,`)) {
		t.Fatalf("export lacks the agent changes:\n%s", first.String()[:300])
	}
	other := openClock(t, newManualClock())
	if _, err := other.Import(ctx, bytes.NewReader(first.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := other.Export(ctx, "r", &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Fatal("export after import differs")
	}
	if got, _ := other.AgentChanges(ctx, "r"); len(got) != 2 || string(got[1].Config) != "v3" {
		t.Fatalf("imported changes: %+v", got)
	}
	if ri, _ := other.Run(ctx, "r"); ri.Lease.Owner != "" {
		t.Fatalf("an imported run carries a lease: %+v", ri.Lease)
	}
	// A corrupt change is caught.
	if _, err := s.w.Exec(`UPDATE agent_changes SET config = 'v9' WHERE seq = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AgentChanges(ctx, "r"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupt change: %v", err)
	}
}

func TestOpenMustExistAndMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "absent.db")
	if _, err := Open(path, &Options{MustExist: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("MustExist on a missing file: %v", err)
	}
	if _, err := filepath.Glob(path + "*"); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(path + "*"); len(m) != 0 {
		t.Fatalf("a read-only open created %v", m)
	}
	if _, err := Open(filepath.Join(dir, "no", "such", "dir.db"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing directory: %v", err)
	}
	if _, err := Open(dir, nil); err == nil {
		t.Fatal("a directory opened as a database")
	}
}
