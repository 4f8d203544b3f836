package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// Options choose what to measure.
type Options struct {
	// Ns are the run lengths in turns (default 10, 100, 1000, 10000).
	Ns []int
	// FullNs are the lengths also run with the CRITICAL and FULL
	// durabilities (default: 1000 when it is among Ns).
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
	// Tools is how many tools the agent has (default 1: echo); the model
	// calls echo, the others are a real agent's tool list to be stored
	// (each a realistic schema of about 600 bytes).
	Tools int
	// DB, when set, is a PostgreSQL URL: the workload runs there (each row
	// in a schema of its own, dropped after) instead of on SQLite files,
	// without FullNs (PostgreSQL has no such mode).
	DB string
}

// Row is one measured run.
type Row struct {
	N          int    `json:"n"`
	Tools      int    `json:"tools"`
	Sync       string `json:"sync"` // "NORMAL", "CRITICAL", "FULL", or "" without checkpoints
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
	// FloorTurnUS is the floor of this row, measured alongside it (see
	// probe): at every model call, before the turn's clock starts again,
	// two bare transactions each inserting FloorBytes, driven at the
	// driver level in the same sync mode on a database of their own, are
	// timed; FloorTurnUS is their median plus two CBOR encodings of a
	// step's delta (Floor.EncodeDeltaUS). The turns and their floor thus
	// run interleaved, under the same conditions, on a machine whose speed
	// drifts within seconds. FloorBytes is the warm-up run's bytes per step
	// (with Cold, defaultFloorBytes). FloorRatio is TurnMedianUS /
	// FloorTurnUS. Checkpointed rows only.
	FloorTurnUS float64 `json:"floor_turn_us,omitempty"`
	FloorBytes  int     `json:"floor_bytes,omitempty"`
	FloorRatio  float64 `json:"floor_ratio,omitempty"`
	// TightFloorTurnUS is the floor measured the other way: the same
	// inserts of BytesPerStep in a loop of their own right after the row,
	// with caches hot from nothing but the inserts (plus the same
	// encodings); TightFloorRatio is TurnMedianUS / TightFloorTurnUS.
	TightFloorTurnUS float64 `json:"tight_floor_turn_us,omitempty"`
	TightFloorRatio  float64 `json:"tight_floor_ratio,omitempty"`
}

// defaultFloorBytes sizes the interleaved floor's inserts when no warm-up
// ran: about a step of the workload (bytes per step is 700–725 from 100
// turns on).
const defaultFloorBytes = 720

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
	if opts.DB != "" {
		return runPG(opts)
	}
	rep := Report{Floor: map[string]Floor{}}
	floorBytes := defaultFloorBytes
	if !opts.Cold {
		opts.Progress("warm-up")
		warm := filepath.Join(opts.Dir, "warm-up")
		if err := os.MkdirAll(warm, 0o755); err != nil {
			return rep, err
		}
		row, _, err := runOnce(warm, 200, "NORMAL", 0, opts.Tools)
		if err != nil {
			return rep, err
		}
		floorBytes = int(row.BytesPerStep)
	}
	var lastState core.State
	for _, n := range opts.Ns {
		for _, mode := range []string{"NORMAL", ""} {
			opts.Progress(fmt.Sprintf("N=%d %s", n, label(mode)))
			row, st, err := runOnce(opts.Dir, n, mode, floorBytes, opts.Tools)
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
			if f != n {
				continue
			}
			// The durabilities besides NORMAL: the default (CRITICAL)
			// and FULL (store.Durability).
			for _, mode := range []string{"CRITICAL", "FULL"} {
				opts.Progress(fmt.Sprintf("N=%d %s", n, mode))
				row, _, err := runOnce(opts.Dir, n, mode, floorBytes, opts.Tools)
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
	addEncodings(rep.Rows, delta)
	return rep, nil
}

// runPG is Run on PostgreSQL.
func runPG(opts Options) (Report, error) {
	rep := Report{Floor: map[string]Floor{}}
	floorBytes := defaultFloorBytes
	if !opts.Cold {
		opts.Progress("warm-up")
		row, _, err := runOncePG(opts.DB, 200, true, 0, opts.Tools)
		if err != nil {
			return rep, err
		}
		floorBytes = int(row.BytesPerStep)
	}
	var lastState core.State
	bytes := floorBytes
	for _, n := range opts.Ns {
		for _, checkpoint := range []bool{true, false} {
			opts.Progress(fmt.Sprintf("N=%d %s", n, map[bool]string{true: pgMode, false: label("")}[checkpoint]))
			row, st, err := runOncePG(opts.DB, n, checkpoint, floorBytes, opts.Tools)
			if err != nil {
				return rep, err
			}
			if checkpoint {
				lastState, bytes = st, int(row.BytesPerStep)
				if err := rowFloorPG(opts.DB, &row); err != nil {
					return rep, err
				}
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	opts.Progress("floor " + pgMode)
	f, err := pgFloor(opts.DB, bytes, 4000, true)
	if err != nil {
		return rep, err
	}
	delta := encodeDelta(lastState)
	f.EncodeDeltaUS = delta
	f.TurnUS = 2 * (f.InsertMedianUS + delta)
	rep.Floor[pgMode] = f
	addEncodings(rep.Rows, delta)
	return rep, nil
}

// addEncodings adds a step delta's two encodings to the checkpointed rows'
// floors, and sets their ratios.
func addEncodings(rows []Row, delta float64) {
	for i := range rows {
		if r := &rows[i]; r.Checkpoint {
			r.FloorTurnUS += 2 * delta
			r.FloorRatio = r.TurnMedianUS / r.FloorTurnUS
			r.TightFloorTurnUS += 2 * delta
			r.TightFloorRatio = r.TurnMedianUS / r.TightFloorTurnUS
		}
	}
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
// no checkpointing) and measures it, with its floor measured alongside
// from inserts of floorBytes (none when 0).
func runOnce(dir string, n int, mode string, floorBytes, tools int) (Row, core.State, error) {
	ctx := context.Background()
	row := Row{N: n, Sync: mode, Checkpoint: mode != "", Tools: max(tools, 1)}
	// The bench's own records are allocated before the heap's baseline is
	// taken, so that the run's heap figures leave them out.
	m := &model{n: n, calls: make([]span, 0, n+2)}
	ag := agentWith(n, m, tools)
	path := filepath.Join(dir, fmt.Sprintf("run-%d-%s-%dtools.db", n, strings.ToLower(label(mode)), row.Tools))
	io := openIOCounter()
	defer io.close()
	var p *probe
	if mode != "" && floorBytes > 0 {
		var err error
		if p, err = openProbe(path+"-floor", mode, floorBytes); err != nil {
			return row, core.State{}, err
		}
		defer p.close()
		p.io = io
		p.samples = make([]float64, 0, n+2)
		m.probe = p
		row.FloorBytes = floorBytes
	}
	var st shell.Store = nullStore{}
	var db *sqlite.SQLite
	var empty int64 // the file with its schema and no run
	if mode != "" {
		sync := sqlite.Sync(mode) // NORMAL, CRITICAL or FULL
		var err error
		if db, err = sqlite.Open(path, &sqlite.Options{Sync: sync}); err != nil {
			return row, core.State{}, err
		}
		if err := db.Close(); err != nil {
			return row, core.State{}, err
		}
		if fi, err := os.Stat(path); err == nil {
			empty = fi.Size()
		}
		if db, err = sqlite.Open(path, &sqlite.Options{Sync: sync}); err != nil {
			return row, core.State{}, err
		}
		st = db
	}
	io0 := io.written()
	out, err := measure(ctx, st, m, ag, n, &row)
	if err != nil {
		return row, core.State{}, err
	}
	written := io.written() - io0
	if p != nil {
		written -= p.written
	}
	row.IOBytesPerStep = float64(written) / float64(out.Steps)
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

	if db, err = sqlite.Open(path, nil); err != nil {
		return row, core.State{}, err
	}
	defer db.Close()
	st2, err := loadAndReplay(ctx, db, out.RunID, ag, &row)
	return row, st2, err
}

// measure runs the workload's agent on st and sets the row's run figures:
// times (less the bench's own work at the model calls), memory, steps.
func measure(ctx context.Context, st shell.Store, m *model, ag *shell.Agent, n int, row *Row) (shell.Outcome, error) {
	runtime.GC()
	m.heap.sample()
	baseHeap, baseLive := m.heap.peak, m.heap.live
	m.heap.peak, m.heap.live = 0, 0
	resetPeakRSS()
	start := time.Now()
	out, err := shell.NewRunner(st, &shell.Options{NewID: func() string { return fmt.Sprintf("bench-%d", n) }}).Start(ctx, ag, "go")
	if err != nil {
		return out, err
	}
	// The run's figures leave out the bench's own work: its time at the
	// model calls.
	row.TotalMS = ms(time.Since(start) - m.overhead())
	if m.probe != nil {
		row.FloorTurnUS = m.probe.median() // the encodings are added once measured
	}
	row.PeakRSSBytes = peakRSS()
	if m.heap.peak > baseHeap {
		row.PeakHeapBytes = int64(m.heap.peak - baseHeap)
	}
	if m.heap.live > baseLive {
		row.PeakLiveHeapBytes = int64(m.heap.live - baseLive)
	}
	if out.Status != store.StatusCompleted {
		return out, fmt.Errorf("bench run of %d turns ended %s", n, out.Status)
	}
	row.Steps = out.Steps
	turns := m.turns()
	row.TurnMedianUS, row.TurnP99US = percentile(turns, 0.5), percentile(turns, 0.99)
	return out, nil
}

// loadAndReplay times loading the run's latest state and replaying it, and
// returns the state.
func loadAndReplay(ctx context.Context, db store.Store, runID string, ag *shell.Agent, row *Row) (core.State, error) {
	t0 := time.Now()
	rec, err := db.LoadLatest(ctx, runID)
	if err != nil {
		return core.State{}, err
	}
	row.LoadLatestMS = ms(time.Since(t0))
	enc, _ := core.EncodeMessages(rec.State.Messages)
	row.ConversationBytes = int64(len(enc))
	t0 = time.Now()
	rp, err := shell.Replay(ctx, db, runID, ag.Config)
	if err != nil {
		return core.State{}, err
	}
	if rp.Diverged != nil {
		return core.State{}, fmt.Errorf("bench replay diverged at step %d", rp.Diverged.Seq)
	}
	row.ReplayMS = ms(time.Since(t0))
	return rec.State, nil
}

// floor measures a bare insert of bytes per transaction in the same journal
// and sync mode as the store, at the driver level and through database/sql.
func floor(dir, mode string, bytes int) (Floor, error) {
	f := Floor{Sync: mode, Bytes: bytes}
	count := 4000
	if mode == "FULL" {
		count = 400
	}
	// Each way on a fresh file, so both start from the same empty WAL.
	var err error
	if f.InsertMedianUS, err = tightFloor(filepath.Join(dir, "floor-driver-"+strings.ToLower(mode)+".db"), mode, bytes, count); err != nil {
		return f, err
	}
	db, err := openFloorDB(filepath.Join(dir, "floor-sql-"+strings.ToLower(mode)+".db"), mode)
	if err != nil {
		return f, err
	}
	defer db.Close()
	f.InsertSQLMedianUS, err = floorSQL(db, floorPayload(bytes), count)
	return f, err
}

// rowFloor measures the tight floor of a checkpointed row (see
// Row.TightFloorTurnUS).
func rowFloor(dir string, row *Row) error {
	count := 2000
	if row.Sync == "FULL" {
		count = 200
	}
	us, err := tightFloor(filepath.Join(dir, fmt.Sprintf("floor-row-%d-%s.db", row.N, strings.ToLower(row.Sync))), row.Sync, int(row.BytesPerStep), count)
	if err != nil {
		return err
	}
	row.TightFloorTurnUS = 2 * us // the encodings are added once measured
	return nil
}

// tightFloor is the median of count bare transactions inserting bytes, on
// a fresh database at path, timed in a loop of their own.
func tightFloor(path, mode string, bytes, count int) (float64, error) {
	p, err := openProbe(path, mode, bytes)
	if err != nil {
		return 0, err
	}
	defer p.close()
	for range count {
		if err := p.sample(1); err != nil {
			return 0, err
		}
	}
	return p.median(), nil
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

// ioCounter reads the bytes the process has written to files (Linux's
// wchar) without allocating, so that reading it leaves the heap figures
// alone. Elsewhere it reads 0.
type ioCounter struct {
	f   *os.File
	buf [1024]byte
}

func openIOCounter() *ioCounter {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return &ioCounter{}
	}
	return &ioCounter{f: f}
}

func (c *ioCounter) written() int64 {
	if c.f == nil {
		return 0
	}
	n, _ := c.f.ReadAt(c.buf[:], 0)
	b := c.buf[:n]
	const key = "wchar: "
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	var v int64
	for _, d := range b[i+len(key):] {
		if d < '0' || d > '9' {
			break
		}
		v = v*10 + int64(d-'0')
	}
	return v
}

func (c *ioCounter) close() error {
	if c.f == nil {
		return nil
	}
	return c.f.Close()
}
