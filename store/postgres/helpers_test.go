package postgres

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/storetest"
)

// The tests need a PostgreSQL server: STEPWISE_TEST_POSTGRES, or the
// default URL (defaultTestURL). Without one they skip, saying so loudly,
// unless STEPWISE_REQUIRE_POSTGRES=1, which makes them fail. Each test
// works in a schema of its own, dropped when it ends, so tests run in
// parallel and leave nothing behind.

var server struct {
	once sync.Once
	url  string
	ok   bool
	why  string
}

func checkServer() {
	server.once.Do(func() { server.url, server.ok, server.why = TestURL() })
}

// required reports whether a missing server fails the tests.
func required() bool { return os.Getenv("STEPWISE_REQUIRE_POSTGRES") == "1" }

func unreachable() string {
	return fmt.Sprintf("no PostgreSQL server at %s (%s). To run the store/postgres tests, start one or set "+
		"STEPWISE_TEST_POSTGRES to the URL of one (a database the tests may create schemas in); "+
		"set STEPWISE_REQUIRE_POSTGRES=1 to make a missing server fail the tests", server.url, server.why)
}

func TestMain(m *testing.M) {
	checkServer()
	if !server.ok && !required() {
		bar := strings.Repeat("!", 78)
		fmt.Fprintf(os.Stderr, "%s\nSKIPPING store/postgres tests: %s\n%s\n", bar, unreachable(), bar)
	}
	code := m.Run()
	for _, cleanup := range benchCleanups {
		if err := cleanup(); err != nil {
			fmt.Fprintln(os.Stderr, "drop a benchmark's schema:", err)
		}
	}
	os.Exit(code)
}

// serverURL returns the test server's URL, or skips (fails, when required)
// the test.
func serverURL(t testing.TB) string {
	t.Helper()
	checkServer()
	if !server.ok {
		if required() {
			t.Fatal("STEPWISE_REQUIRE_POSTGRES=1: " + unreachable())
		}
		t.Skip("SKIPPED: " + unreachable())
	}
	return server.url
}

// openTest opens a store in a fresh schema, dropped at the end of the
// test, with a clock that ticks one millisecond per reading.
func openTest(t testing.TB) *Postgres { return openWith(t, &Options{Now: fakeClock()}) }

// openWith opens a store in a fresh schema with options (their Schema is
// the fresh one's).
func openWith(t testing.TB, o *Options) *Postgres {
	t.Helper()
	url := serverURL(t)
	ctx := context.Background()
	s, cleanup, err := OpenTestSchemaOptions(ctx, url, t.Name(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cleanup(); err != nil {
			t.Errorf("drop the test's schema: %v", err)
		}
	})
	return s
}

// reopen opens another store on s's schema, as another process would,
// closed at the end of the test.
func reopen(t testing.TB, s *Postgres, o *Options) *Postgres {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	opts.Schema = s.Schema()
	other, err := Open(context.Background(), serverURL(t), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// exec runs SQL on the store's database (for tests that damage it).
func exec(t testing.TB, s *Postgres, sql string, args ...any) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// fakeClock returns a deterministic clock that advances one millisecond
// per reading; safe for concurrent use.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// manualClock is a clock the test moves by hand.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *manualClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *manualClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// synthInitial is the initial state of the synthetic runs of these tests.
func synthInitial(id string) core.State {
	return baseState("question "+id, []core.Message{
		{Role: core.RoleSystem, Content: "be brief"},
		{Role: core.RoleUser, Content: "question " + id},
	})
}

// synth generates the checkpoints of the synthetic run id in order.
type synth struct {
	log []core.Message
	seq int
}

func newSynth(id string) *synth { return &synth{log: synthInitial(id).Messages} }

func (g *synth) next() store.Checkpoint {
	g.seq++
	var cp store.Checkpoint
	cp, g.log = turnStep(g.log, g.seq, 200)
	return cp
}

// leaseOf is storetest.LeaseOf.
func leaseOf(t tb, s storetest.LeaseAcquirer, id string) store.Lease {
	t.Helper()
	return storetest.LeaseOf(t, s, id)
}

// flip inverts one byte (at, modulo its length) of a bytea column of the
// row of table where matches, leaving its checksum as it is.
func flip(t *testing.T, s *Postgres, table, column, where string, at int) {
	t.Helper()
	ctx := context.Background()
	var b []byte
	if err := s.pool.QueryRow(ctx, `SELECT `+column+` FROM `+table+` WHERE `+where).Scan(&b); err != nil {
		t.Fatal(err)
	}
	b[at%len(b)] ^= 0x20
	exec(t, s, `UPDATE `+table+` SET `+column+` = $1 WHERE `+where, b)
}

// rkOf is the run's key.
func rkOf(t testing.TB, s *Postgres, id string) int64 {
	t.Helper()
	var rk int64
	if err := s.pool.QueryRow(context.Background(), `SELECT rk FROM runs WHERE id = $1`, id).Scan(&rk); err != nil {
		t.Fatal(err)
	}
	return rk
}

// The synthetic runs of storetest's kit.
var (
	baseState  = storetest.BaseState
	withAction = storetest.WithAction
	turnStep   = storetest.TurnStep
	newRun     = storetest.NewRun
)
