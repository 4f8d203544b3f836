package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3" // the floor uses the same driver as the store
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// Options choose what to measure.
type Options struct {
	// Ns are the run lengths in turns (default 10, 100, 1000, 10000).
	Ns []int
	// FullNs are the lengths also run with synchronous=FULL (default: 1000
	// when it is among Ns).
	FullNs []int
	// Dir holds the databases (default: a new temp dir, removed after).
	Dir string
	// Progress, when set, is told what is being measured.
	Progress func(string)
	// Cold skips the warm-up run. By default a short run (its own
	// database, not reported) goes first, so that the first size measured
	// is not also paying for the process's start: heap growth, first-use
	// initialisation, cold code. The floor is measured warm too.
	Cold bool
}

// Row is one measured run.
type Row struct {
	N          int    `json:"n"`
	Sync       string `json:"sync"` // "NORMAL", "FULL", or "" without checkpoints
	Checkpoint bool   `json:"checkpoint"`
	Steps      int    `json:"steps"`
	// Per turn: one model call and one tool call, both checkpointed.
	TurnMedianUS float64 `json:"turn_median_us"`
	TurnP99US    float64 `json:"turn_p99_us"`
	TotalMS      float64 `json:"total_ms"`
	// BytesPerStep is the growth of the database file per step over the
	// empty file (after the WAL is checkpointed into it; the file grows in
	// whole 4 KiB pages, which rounds small runs up); IOBytesPerStep is what the process
	// wrote to files per step (WAL frames and checkpoints included).
	BytesPerStep   float64 `json:"bytes_per_step"`
	IOBytesPerStep float64 `json:"io_bytes_per_step"`
	// PeakRSSBytes is the process's peak resident set during the run;
	// PeakHeapBytes the largest Go heap sampled at each turn (its objects,
	// live ones and garbage not yet collected: how high it gets depends on
	// GOGC), over the heap before the run; PeakLiveHeapBytes the largest
	// live heap the garbage collector found, over the same baseline;
	// ConversationBytes the encoded size of the final conversation.
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	PeakHeapBytes     int64   `json:"peak_heap_bytes"`
	PeakLiveHeapBytes int64   `json:"peak_live_heap_bytes"`
	ConversationBytes int64   `json:"conversation_bytes"`
	LoadLatestMS      float64 `json:"load_latest_ms"`
	ReplayMS          float64 `json:"replay_ms"`
	// FloorTurnUS is the floor of this row, two steps' worth of the bare
	// minimum: a bare insert of its BytesPerStep, driven at the driver
	// level and measured right after the row in the same sync mode (so
	// that the ratio compares figures taken moments apart on a machine
	// whose speed drifts), plus the CBOR encoding of a step's delta
	// (Floor.EncodeDeltaUS). Checkpointed rows only. FloorRatio is
	// TurnMedianUS / FloorTurnUS.
	FloorTurnUS float64 `json:"floor_turn_us,omitempty"`
	FloorRatio  float64 `json:"floor_ratio,omitempty"`
}

// Floor is the cost of the bare minimum on this machine.
type Floor struct {
	Sync string `json:"sync"`
	// Bytes is the size of one insert: the workload's bytes per step.
	Bytes int `json:"bytes"`
	// InsertMedianUS is one transaction inserting Bytes bytes, driven at
	// the driver level (BEGIN IMMEDIATE, INSERT and COMMIT prepared once,
	// run on a pinned connection): the least a Go program can do through
	// this driver. TurnUS is the floor of a turn: two inserts and two
	// encodings of a step's delta (EncodeDeltaUS), the two checkpoints.
	InsertMedianUS float64 `json:"insert_median_us"`
	TurnUS         float64 `json:"turn_us"`
	// InsertSQLMedianUS is the same insert as a database/sql transaction
	// (db.Begin, a prepared statement, Commit), the usual way; for
	// reference.
	InsertSQLMedianUS float64 `json:"insert_sql_median_us"`
	// EncodeDeltaUS is the CBOR encoding of one step's delta (the state's
	// head and the messages the step added).
	EncodeDeltaUS float64 `json:"encode_delta_us"`
}

// Report is everything measured.
type Report struct {
	Rows  []Row            `json:"rows"`
	Floor map[string]Floor `json:"floor"`
}

// Run measures the workload.
func Run(opts Options) (Report, error) {
	if len(opts.Ns) == 0 {
		opts.Ns = []int{10, 100, 1000, 10000}
	}
	if opts.FullNs == nil {
		for _, n := range opts.Ns {
			if n == 1000 {
				opts.FullNs = []int{1000}
			}
		}
	}
	if opts.Progress == nil {
		opts.Progress = func(string) {}
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "stepwise-bench")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(dir)
		opts.Dir = dir
	}
	opts.Ns = dedupe(opts.Ns)
	rep := Report{Floor: map[string]Floor{}}
	if !opts.Cold {
		opts.Progress("warm-up")
		warm := filepath.Join(opts.Dir, "warm-up")
		if err := os.MkdirAll(warm, 0o755); err != nil {
			return rep, err
		}
		if _, _, err := runOnce(warm, 200, "NORMAL"); err != nil {
			return rep, err
		}
	}
	var lastState core.State
	for _, n := range opts.Ns {
		for _, mode := range []string{"NORMAL", ""} {
			opts.Progress(fmt.Sprintf("N=%d %s", n, label(mode)))
			row, st, err := runOnce(opts.Dir, n, mode)
			if err != nil {
				return rep, err
			}
			if mode != "" {
				lastState = st
				if err := rowFloor(opts.Dir, &row); err != nil {
					return rep, err
				}
			}
			rep.Rows = append(rep.Rows, row)
		}
		for _, f := range opts.FullNs {
			if f == n {
				opts.Progress(fmt.Sprintf("N=%d FULL", n))
				row, _, err := runOnce(opts.Dir, n, "FULL")
				if err != nil {
					return rep, err
				}
				if err := rowFloor(opts.Dir, &row); err != nil {
					return rep, err
				}
				rep.Rows = append(rep.Rows, row)
			}
		}
	}
	bytes := 0
	for _, r := range rep.Rows {
		if r.Checkpoint && r.Sync == "NORMAL" {
			bytes = int(r.BytesPerStep) // the largest N's, measured last
		}
	}
	delta := encodeDelta(lastState)
	for _, mode := range []string{"NORMAL", "FULL"} {
		if mode == "FULL" && len(opts.FullNs) == 0 {
			continue
		}
		opts.Progress("floor " + mode)
		f, err := floor(opts.Dir, mode, bytes)
		if err != nil {
			return rep, err
		}
		f.EncodeDeltaUS = delta
		f.TurnUS = 2 * (f.InsertMedianUS + delta)
		rep.Floor[strings.ToLower(mode)] = f
	}
	for i := range rep.Rows {
		if r := &rep.Rows[i]; r.FloorTurnUS > 0 {
			r.FloorTurnUS += 2 * delta
			r.FloorRatio = r.TurnMedianUS / r.FloorTurnUS
		}
	}
	return rep, nil
}

// dedupe drops repeated sizes, keeping the first of each.
func dedupe(ns []int) []int {
	var out []int
	for _, n := range ns {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func label(mode string) string {
	if mode == "" {
		return "no checkpoints"
	}
	return mode
}

// runOnce runs the workload for n turns with the given sync mode ("" for
// no checkpointing) and measures it.
func runOnce(dir string, n int, mode string) (Row, core.State, error) {
	ctx := context.Background()
	row := Row{N: n, Sync: mode, Checkpoint: mode != ""}
	m := &model{n: n}
	ag := agent(n, m)
	path := filepath.Join(dir, fmt.Sprintf("run-%d-%s.db", n, strings.ToLower(label(mode))))
	var st shell.Store = nullStore{}
	var db *store.SQLite
	var empty int64 // the file with its schema and no run
	if mode != "" {
		sync := store.SyncNormal
		if mode == "FULL" {
			sync = store.SyncFull
		}
		var err error
		if db, err = store.Open(path, &store.Options{Sync: sync}); err != nil {
			return row, core.State{}, err
		}
		if err := db.Close(); err != nil {
			return row, core.State{}, err
		}
		if fi, err := os.Stat(path); err == nil {
			empty = fi.Size()
		}
		if db, err = store.Open(path, &store.Options{Sync: sync}); err != nil {
			return row, core.State{}, err
		}
		st = db
	}
	runtime.GC()
	m.heap.sample()
	baseHeap, baseLive := m.heap.peak, m.heap.live
	m.heap.peak, m.heap.live = 0, 0
	resetPeakRSS()
	io0 := ioWritten()
	start := time.Now()
	out, err := shell.NewRunner(st, &shell.Options{NewID: func() string { return fmt.Sprintf("bench-%d", n) }}).Start(ctx, ag, "go")
	if err != nil {
		return row, core.State{}, err
	}
	row.TotalMS = ms(time.Since(start))
	row.IOBytesPerStep = float64(ioWritten()-io0) / float64(out.Steps)
	row.PeakRSSBytes = peakRSS()
	if m.heap.peak > baseHeap {
		row.PeakHeapBytes = int64(m.heap.peak - baseHeap)
	}
	if m.heap.live > baseLive {
		row.PeakLiveHeapBytes = int64(m.heap.live - baseLive)
	}
	if out.Status != store.StatusCompleted {
		return row, core.State{}, fmt.Errorf("bench run of %d turns ended %s", n, out.Status)
	}
	row.Steps = out.Steps
	var turns []float64
	for i := 1; i < len(m.calls); i++ {
		turns = append(turns, float64(m.calls[i].Sub(m.calls[i-1]).Nanoseconds())/1e3)
	}
	row.TurnMedianUS, row.TurnP99US = percentile(turns, 0.5), percentile(turns, 0.99)
	if db == nil {
		return row, core.State{}, nil
	}
	if err := db.Close(); err != nil { // checkpoints the WAL into the file
		return row, core.State{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return row, core.State{}, err
	}
	row.BytesPerStep = float64(fi.Size()-empty) / float64(out.Steps)

	if db, err = store.Open(path, nil); err != nil {
		return row, core.State{}, err
	}
	defer db.Close()
	t0 := time.Now()
	rec, err := db.LoadLatest(ctx, out.RunID)
	if err != nil {
		return row, core.State{}, err
	}
	row.LoadLatestMS = ms(time.Since(t0))
	enc, _ := core.EncodeMessages(rec.State.Messages)
	row.ConversationBytes = int64(len(enc))
	t0 = time.Now()
	rp, err := shell.Replay(ctx, db, out.RunID, ag.Config)
	if err != nil {
		return row, core.State{}, err
	}
	if rp.Diverged != nil {
		return row, core.State{}, fmt.Errorf("bench replay diverged at step %d", rp.Diverged.Seq)
	}
	row.ReplayMS = ms(time.Since(t0))
	return row, rec.State, nil
}

// floor measures a bare insert of bytes per transaction in the same journal
// and sync mode as the store, at the driver level and through database/sql.
func floor(dir, mode string, bytes int) (Floor, error) {
	f := Floor{Sync: mode, Bytes: bytes}
	payload := make([]byte, bytes)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	count := 4000
	if mode == "FULL" {
		count = 400
	}
	// Each way on a fresh file, so both start from the same empty WAL.
	var err error
	if f.InsertMedianUS, err = floorDB(dir, "driver", mode, func(db *sql.DB) (float64, error) { return floorDriver(db, payload, count) }); err != nil {
		return f, err
	}
	if f.InsertSQLMedianUS, err = floorDB(dir, "sql", mode, func(db *sql.DB) (float64, error) { return floorSQL(db, payload, count) }); err != nil {
		return f, err
	}
	return f, nil
}

// floorDB runs measure on a fresh database holding one table t.
func floorDB(dir, name, mode string, measure func(*sql.DB) (float64, error)) (float64, error) {
	path := filepath.Join(dir, "floor-"+name+"-"+strings.ToLower(mode)+".db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous="+mode+"&_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`); err != nil {
		return 0, err
	}
	return measure(db)
}

// rowFloor measures the floor of a checkpointed row (see Row.FloorTurnUS).
func rowFloor(dir string, row *Row) error {
	payload := make([]byte, max(int(row.BytesPerStep), 1))
	count := 2000
	if row.Sync == "FULL" {
		count = 200
	}
	us, err := floorDB(dir, fmt.Sprintf("row-%d", row.N), row.Sync, func(db *sql.DB) (float64, error) { return floorDriver(db, payload, count) })
	if err != nil {
		return err
	}
	row.FloorTurnUS = 2 * us // the encoding of the delta is added once it is measured
	return nil
}

// floorDriver times count inserts driven at the driver level.
func floorDriver(db *sql.DB, payload []byte, count int) (float64, error) {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	samples := make([]float64, 0, count)
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("driver connection %T", dc)
		}
		var st [3]driver.StmtExecContext
		for i, q := range []string{`BEGIN IMMEDIATE`, `INSERT INTO t (data) VALUES (?)`, `COMMIT`} {
			s, err := c.Prepare(q)
			if err != nil {
				return err
			}
			defer s.Close()
			st[i] = s.(driver.StmtExecContext)
		}
		args := []driver.NamedValue{{Ordinal: 1, Value: payload}}
		for i := 0; i < count; i++ {
			t0 := time.Now()
			if _, err := st[0].ExecContext(ctx, nil); err != nil {
				return err
			}
			if _, err := st[1].ExecContext(ctx, args); err != nil {
				return err
			}
			if _, err := st[2].ExecContext(ctx, nil); err != nil {
				return err
			}
			samples = append(samples, float64(time.Since(t0).Nanoseconds())/1e3)
		}
		return nil
	})
	return percentile(samples, 0.5), err
}

// floorSQL times count inserts as database/sql transactions.
func floorSQL(db *sql.DB, payload []byte, count int) (float64, error) {
	ins, err := db.Prepare(`INSERT INTO t (data) VALUES (?)`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	samples := make([]float64, 0, count)
	for i := 0; i < count; i++ {
		t0 := time.Now()
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		if _, err := tx.Stmt(ins).Exec(payload); err != nil {
			tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		samples = append(samples, float64(time.Since(t0).Nanoseconds())/1e3)
	}
	return percentile(samples, 0.5), nil
}

// encodeDelta times the CBOR encoding of one step's delta, as the store
// encodes it: the state without its messages, and the last two messages.
func encodeDelta(st core.State) float64 {
	head := st
	head.Messages = nil
	var tail []core.Message
	if n := len(st.Messages); n >= 2 {
		tail = st.Messages[n-2:]
	}
	const rounds = 2000
	t0 := time.Now()
	for i := 0; i < rounds; i++ {
		_, _ = core.EncodeState(head)
		_, _ = core.EncodeMessages(tail)
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e3 / rounds
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// resetPeakRSS resets the kernel's peak-RSS mark (Linux); elsewhere the
// figure is the process's peak so far.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSS() int64 { return procField("/proc/self/status", "VmHWM:") * 1024 }

func ioWritten() int64 { return procField("/proc/self/io", "wchar:") }

func procField(file, key string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(strings.TrimPrefix(line, key))
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}
