package runfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/runfile"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// record drives the core through a run that calls a tool twice, changes
// its agent once, and completes; it checkpoints every step to db.
func record(t *testing.T, db store.Store, id string) {
	t.Helper()
	ctx := context.Background()
	cfg := core.DefaultConfig()
	cfg.Tools = []core.Tool{{Name: "search", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
	st, err := core.Start(cfg, core.Request{Input: "find it"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.CreateRun(ctx, store.NewRun{ID: id, Agent: cfg.Name, ConfigHash: core.ConfigHash(cfg), Config: []byte(`{"v":1}`),
		Input: "find it", Initial: st, Owner: "test", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	replies := []core.Result{
		core.ModelReply{Calls: []core.NativeCall{{ID: "c1", Name: "search", Arguments: `{"q":"a"}`}}},
		core.ToolResults{Results: []core.ToolResult{{CallID: "c1", Output: "found a"}}},
		core.ModelReply{Calls: []core.NativeCall{{ID: "c2", Name: "search", Arguments: `{"q":"b"}`}}},
		core.ToolResults{Results: []core.ToolResult{{CallID: "c2", Output: "found b"}}},
		core.ModelReply{Text: "it is a and b"},
	}
	var res core.Result
	for seq := 1; ; seq++ {
		a, err := core.Step(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Checkpoint(ctx, l, store.Checkpoint{Seq: seq, Result: res, Action: a}); err != nil {
			t.Fatal(err)
		}
		if seq == 2 {
			if err := db.ChangeAgent(ctx, l, []byte(`{"v":2}`)); err != nil {
				t.Fatal(err)
			}
		}
		if _, done := a.(core.Complete); done {
			return
		}
		res = replies[0]
		replies = replies[1:]
		if st, err = core.Resume(cfg, a.Next(), res); err != nil {
			t.Fatal(err)
		}
	}
}

func openDB(t *testing.T) *sqlite.SQLite {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func export(t *testing.T, db store.Store, id string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := db.Export(context.Background(), id, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A run read from its file is the run the store holds: its description,
// its agent changes and every step, byte for byte.
func TestReadMatchesTheStore(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	record(t, db, "r1")
	f, err := runfile.Read(bytes.NewReader(export(t, db, "r1")))
	if err != nil {
		t.Fatal(err)
	}
	info, err := db.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.Run(ctx, "r1")
	info.Lease, info.RetryAt = store.Lease{}, time.Time{}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", info) {
		t.Fatalf("run from the file:\n%+v\nfrom the store:\n%+v", got, info)
	}
	if string(got.Config) != `{"v":2}` || string(got.StartConfig) != `{"v":1}` {
		t.Fatalf("configs %s, %s", got.Config, got.StartConfig)
	}
	changes, _ := f.AgentChanges(ctx, "r1")
	want, _ := db.AgentChanges(ctx, "r1")
	if len(changes) != 1 || fmt.Sprint(changes) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", changes, want)
	}
	var stored []store.StepRecord
	if err := db.Steps(ctx, "r1", func(r store.StepRecord) error { stored = append(stored, r); return nil }); err != nil {
		t.Fatal(err)
	}
	var read []store.StepRecord
	if err := f.Steps(ctx, "r1", func(r store.StepRecord) error { read = append(read, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(read) != len(stored) || len(read) != 7 {
		t.Fatalf("%d steps read, %d stored", len(read), len(stored))
	}
	sawTools := false
	for i := range stored {
		if d := sameRecord(stored[i], read[i]); d != "" {
			t.Fatalf("step %d: %s", i, d)
		}
		if m, ok := read[i].Action.(core.RequestModelCall); ok && len(m.Tools) == 1 {
			sawTools = true // stored by reference, re-attached
		}
	}
	if !sawTools {
		t.Fatal("no model call carries its tool list")
	}
	last, _ := f.LoadLatest(ctx, "r1")
	step3, _ := f.LoadStep(ctx, "r1", 3)
	if last.Seq != 6 || step3.Seq != 3 {
		t.Fatalf("LoadLatest %d, LoadStep(3) %d", last.Seq, step3.Seq)
	}
	var from []int
	_ = f.StepsFrom(ctx, "r1", 5, func(r store.StepRecord) error { from = append(from, r.Seq); return nil })
	if fmt.Sprint(from) != "[5 6]" {
		t.Fatalf("StepsFrom(5) = %v", from)
	}
}

func sameRecord(a, b store.StepRecord) string {
	enc := func(r store.StepRecord) string {
		s, _ := core.EncodeState(r.State)
		var act, res []byte
		if r.Action != nil {
			act, _ = core.EncodeAction(r.Action)
		}
		if r.Result != nil {
			res, _ = core.EncodeResult(r.Result)
		}
		return fmt.Sprintf("%d %x %x %x %s", r.Seq, s, act, res, r.Created)
	}
	if x, y := enc(a), enc(b); x != y {
		return fmt.Sprintf("differs:\n  store: %s\n  file:  %s", x, y)
	}
	return ""
}

func TestReadRefusesCorruptFilesAndOtherRuns(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	record(t, db, "r1")
	file := export(t, db, "r1")
	// Step 2 with another checksum than its contents give.
	lines := bytes.Split(file, []byte("\n"))
	for i, l := range lines {
		if bytes.HasPrefix(l, []byte(`{"seq":2,`)) {
			lines[i] = bytes.Replace(l, []byte(`"crc32c":"`), []byte(`"crc32c":"0`), 1)
		}
	}
	bad := bytes.Join(lines, []byte("\n"))
	if _, err := runfile.Read(bytes.NewReader(bad)); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "step 2") {
		t.Fatalf("corrupt file: %v", err)
	}
	if _, err := runfile.Read(strings.NewReader(`{"format": "something else"}`)); err == nil {
		t.Fatal("a file of another format was read")
	}
	path := filepath.Join(t.TempDir(), "missing.json")
	if _, err := runfile.ReadFile(path); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}
	f, err := runfile.Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Run(ctx, "r2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another run: %v", err)
	}
	if _, err := f.LoadStep(ctx, "r1", 99); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a step past the end: %v", err)
	}
}
