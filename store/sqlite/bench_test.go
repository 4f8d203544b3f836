package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Benchmarks. A turn is two steps, as in a real run: a tools step that adds
// the model's assistant message (with one tool call) and a model step that
// adds the tool's ~200-byte result message. Fixture runs are built once per
// size (outside the timings) and shared.
//
// BenchmarkAppendStep appends steps to a run prefilled to N turns, in batches
// of two segments' worth of steps (so the periodic segment copy is in the
// figure, amortized as in a real run); after each batch the run is put back
// to turn N with the timer stopped. ns/op is one step; row-B/step is the
// bytes of the bodies a step writes (its row's body: action, result, state
// head, new messages, compressed when that pays), segment copies included;
// disk-B/step is the growth of the database's used pages per step.

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

var (
	benchOnce sync.Once
	benchDir  string
	benchMu   sync.Mutex
	fixtures  = map[int]*fixture{}
)

// fixture is a store holding one run prefilled to some number of turns.
type fixture struct {
	s     *SQLite
	id    string
	rk    int64
	open  *codec.OpenSegment // the run's open segment at seq
	seq   int                // last step
	log   []core.Message     // the run's messages at seq
	turns int
	lease store.Lease
}

func benchStore(b *testing.B, name string) *SQLite {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stepwise-store-bench-")
		if err != nil {
			panic(err)
		}
		benchDir = dir
	})
	s, err := Open(filepath.Join(benchDir, name+".db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// getFixture returns the store with a run prefilled to turns turns.
func getFixture(b *testing.B, turns int) *fixture {
	benchMu.Lock()
	defer benchMu.Unlock()
	if f := fixtures[turns]; f != nil {
		return f
	}
	f := &fixture{s: benchStore(b, fmt.Sprintf("turns%d", turns)), id: "bench", turns: turns}
	ctx := context.Background()
	initial := synthInitial(f.id)
	var err error
	if f.lease, err = f.s.CreateRun(ctx, store.NewRun{ID: f.id, Agent: "bench", Initial: initial, Owner: "bench/1/x", LeaseTTL: 24 * time.Hour}); err != nil {
		b.Fatal(err)
	}
	f.log = initial.Messages
	const batch = 1000
	for f.seq < 2*turns {
		err := f.s.write(ctx, "fill", func(tx *wtx) error {
			for i := 0; i < batch && f.seq < 2*turns; i++ {
				var cp store.Checkpoint
				cp, f.log = turnStep(f.log, f.seq+1, 200)
				after, open, err := f.s.appendStep(ctx, tx, f.lease, cp, store.StatusOf(cp.Action))
				if err != nil {
					return err
				}
				f.s.cache.SetOpenSegment(after.RK, open)
				f.seq++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := f.s.w.QueryRow(`SELECT rk FROM runs WHERE id = ?`, f.id).Scan(&f.rk); err != nil {
		b.Fatal(err)
	}
	f.open = f.s.cache.OpenSegment(f.rk)
	fixtures[turns] = f
	return f
}

// reset puts the run back to its prefilled turn.
func (f *fixture) reset(b *testing.B) {
	tx, err := f.s.w.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer rollback(tx)
	rk := f.rk
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM steps WHERE id > ? AND id <= ?`, []any{rowKey(rk, f.seq), rowKey(rk, maxSeq)}},
		{`DELETE FROM segments WHERE id >= ? AND id <= ? AND seq_to > ?`, []any{rowKey(rk, 0), rowKey(rk, maxSeq), f.seq}},
	} {
		if _, err := tx.Exec(q.sql, q.args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	// A copy: the store fills a written segment's buffer again.
	if f.open != nil {
		o := *f.open
		o.Body = slices.Clone(o.Body)
		f.s.cache.SetOpenSegment(f.rk, &o)
	} else {
		f.s.cache.SetOpenSegment(f.rk, nil)
	}
}

// rowBytes is what step cp writes: its record's blobs and its new messages
// (not counting segment copies).
func rowBytes(b *testing.B, cp store.Checkpoint, before int) int {
	row, _, err := codec.Build(nil, nil, tailBefore(cp, before), cp, time.Now().UnixNano(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return len(row.Body)
}

// tailBefore is the tail of a run whose log holds the first before
// messages of cp's state.
func tailBefore(cp store.Checkpoint, before int) codec.Tail {
	t := codec.Tail{Seq: cp.Seq - 1, MsgCount: before}
	if before > 0 {
		t.MsgSum = codec.MessageSum(core.AppendMessage(nil, cp.Action.Next().Messages[before-1]))
	}
	return t
}

func usedBytes(b *testing.B, db *sql.DB) int64 {
	var pages, free, size int64
	if err := db.QueryRow(`SELECT (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count),
		(SELECT page_size FROM pragma_page_size)`).Scan(&pages, &free, &size); err != nil {
		b.Fatal(err)
	}
	return (pages - free) * size
}

func BenchmarkAppendStep(b *testing.B) {
	for _, turns := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			f := getFixture(b, turns)
			ctx := context.Background()
			const batch = 2 * codec.SegmentSteps
			cps := make([]store.Checkpoint, batch)
			log := f.log
			for i := range cps {
				cps[i], log = turnStep(log, f.seq+1+i, 200)
			}
			i := 0
			for b.Loop() {
				if err := f.s.Checkpoint(ctx, f.lease, cps[i]); err != nil {
					b.Fatal(err)
				}
				if i++; i == batch {
					b.StopTimer()
					f.reset(b)
					i = 0
					b.StartTimer()
				}
			}
			b.StopTimer()
			f.reset(b)
			before := usedBytes(b, f.s.w)
			for _, cp := range cps {
				if err := f.s.Checkpoint(ctx, f.lease, cp); err != nil {
					b.Fatal(err)
				}
			}
			grown := usedBytes(b, f.s.w) - before
			var rows int64
			if err := f.s.w.QueryRow(`SELECT
				(SELECT sum(length(body)) FROM steps WHERE id > ?1 AND id <= ?2) +
				(SELECT coalesce(sum(length(body)), 0) FROM segments WHERE id BETWEEN ?3 AND ?2 AND seq_to > ?4)`,
				rowKey(f.rk, f.seq), rowKey(f.rk, maxSeq), rowKey(f.rk, 0), f.seq).Scan(&rows); err != nil {
				b.Fatal(err)
			}
			f.reset(b)
			b.ReportMetric(float64(rows)/batch, "row-B/step")
			b.ReportMetric(float64(grown)/batch, "disk-B/step")
		})
	}
}

// BenchmarkBareInsert is the floor for BenchmarkAppendStep: one transaction
// inserting one row of the same bytes as an average step, in a database
// opened the same way (WAL, synchronous NORMAL, BEGIN IMMEDIATE), with
// nothing between the program and the driver.
func BenchmarkBareInsert(b *testing.B) {
	s := benchStore(b, "bare")
	defer s.Close()
	if _, err := s.w.Exec(`CREATE TABLE IF NOT EXISTS bare (k INTEGER PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	// The bytes an average step writes, as BenchmarkAppendStep counts them:
	// its body, plus its messages once more for the segment copy.
	g := newSynth("bench")
	total := 0
	const n = 2 * codec.SegmentSteps
	for i := 0; i < n; i++ {
		before := len(g.log)
		cp := g.next()
		body, _ := codec.EncodeMessages(nil, g.log[before:])
		total += rowBytes(b, cp, before) + len(body)
	}
	payload := make([]byte, total/n)
	// Driven at the driver level: BEGIN IMMEDIATE, the insert and COMMIT
	// prepared once and run on the pinned write connection.
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		var st [3]driver.StmtExecContext
		for i, q := range []string{`BEGIN IMMEDIATE`, `INSERT INTO bare (v) VALUES (?)`, `COMMIT`} {
			ds, err := c.Prepare(q)
			if err != nil {
				return err
			}
			defer ds.Close()
			st[i] = ds.(driver.StmtExecContext)
		}
		args := []driver.NamedValue{{Ordinal: 1, Value: payload}}
		ctx := context.Background()
		for b.Loop() {
			for i, a := range [][]driver.NamedValue{nil, args, nil} {
				if _, err := st[i].ExecContext(ctx, a); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(payload)), "row-B/step")
}

func BenchmarkLoadLatest(b *testing.B) {
	f := getFixture(b, 10000)
	ctx := context.Background()
	for b.Loop() {
		rec, err := f.s.LoadLatest(ctx, f.id)
		if err != nil {
			b.Fatal(err)
		}
		if len(rec.State.Messages) != len(f.log) {
			b.Fatalf("%d messages, want %d", len(rec.State.Messages), len(f.log))
		}
	}
}

// BenchmarkLoadLatestAt loads the latest state of runs of 32 and 200 turns
// (64 and 400 steps: one segment and no step row to read, six segments
// and 16 step rows), from the store that wrote them, whose segment cache
// holds their segments after the first load, and from a store on the same
// file without one (nocache): what the cache saves, and whether a load is
// flat in the log's length (issue 23).
func BenchmarkLoadLatestAt(b *testing.B) {
	ctx := context.Background()
	for _, turns := range []int{32, 200} {
		f := getFixture(b, turns)
		nocache, err := Open(f.s.Path(), &Options{LogCacheBytes: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer nocache.Close()
		for _, c := range []struct {
			name string
			s    *SQLite
		}{{"cache", f.s}, {"nocache", nocache}} {
			b.Run(fmt.Sprintf("steps=%d/%s", f.seq, c.name), func(b *testing.B) {
				for b.Loop() {
					rec, err := c.s.LoadLatest(ctx, f.id)
					if err != nil {
						b.Fatal(err)
					}
					if len(rec.State.Messages) != len(f.log) {
						b.Fatalf("%d messages, want %d", len(rec.State.Messages), len(f.log))
					}
				}
			})
		}
	}
}

func BenchmarkLoadEarly(b *testing.B) {
	f := getFixture(b, 10000)
	ctx := context.Background()
	for b.Loop() {
		if _, err := f.s.LoadStep(ctx, f.id, 10); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplay1000(b *testing.B) {
	f := getFixture(b, 1000)
	ctx := context.Background()
	for b.Loop() {
		n := 0
		if err := f.s.Steps(ctx, f.id, func(store.StepRecord) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != f.seq+1 {
			b.Fatalf("%d steps, want %d", n, f.seq+1)
		}
	}
}

// BenchmarkEncodeStep is the Go side of a checkpoint before any SQL: a
// step's action, result and state head encoded, and its row built (the new
// messages encoded, the append-only check), at turn 1,000.
func BenchmarkEncodeStep(b *testing.B) {
	log := synthInitial("bench").Messages
	var cps []store.Checkpoint
	for seq := 1; seq <= 2002; seq++ {
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 200)
		if seq > 2000 {
			cps = append(cps, cp)
		}
	}
	tails := make([]codec.Tail, len(cps))
	for i, cp := range cps {
		tails[i] = tailBefore(cp, len(cp.Action.Next().Messages)-1)
	}
	var buf, spare []byte
	var tools codec.ToolLists
	for b.Loop() {
		for i, cp := range cps {
			row, sp, err := codec.Build(buf, spare, tails[i], cp, time.Now().UnixNano(), &tools)
			if err != nil {
				b.Fatal(err)
			}
			if row.NewTools != nil {
				tools.Stored(row.Tools)
			}
			buf, spare = row.Buf, sp
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cps)), "ns/step")
}

// BenchmarkRun reads a run's row (what a server reads on most requests).
func BenchmarkRun(b *testing.B) {
	s := openTest(b)
	ctx := context.Background()
	log := newRun(b, s, "r1").Messages
	var cp store.Checkpoint
	for seq := 1; seq <= 100; seq++ {
		cp, log = turnStep(log, seq, 10)
		if err := s.Checkpoint(ctx, leaseOf(b, s, "r1"), cp); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Run(ctx, "r1"); err != nil {
			b.Fatal(err)
		}
	}
}
