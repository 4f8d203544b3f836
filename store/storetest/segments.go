package storetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// testRoundTripSegments: long runs, whose loads go through segments,
// including segments whose steps appended no message, written by two
// stores in turn (the other one reads segments back), one long enough that
// a store reading Steps in pages (store/postgres: 256 steps) reads several,
// and a fork whose step 0 holds a long log.
func testRoundTripSegments(t *testing.T, h Harness) {
	s := open(t, h, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	other := reopen(t, h, s, nil)
	for _, c := range []struct {
		id    string
		steps int
		pAdd  float64 // chance that a step appends messages
	}{
		{"dense", 3*codec.SegmentSteps + 10, 1},
		{"sparse", 4*codec.SegmentSteps + 1, 0.05},
		{"empty", 2 * codec.SegmentSteps, 0},
		{"long", 256 + 2*codec.SegmentSteps + 3, 1},
	} {
		var log []core.Message
		initial := baseState("q", nil)
		if _, err := s.CreateRun(ctx, store.NewRun{ID: c.id, Initial: initial}); err != nil {
			t.Fatal(err)
		}
		want := []core.State{initial}
		actions := []core.Action{nil}
		for seq := 1; seq <= c.steps; seq++ {
			if rng.Float64() < c.pAdd {
				for i := rng.IntN(3); i >= 0; i-- {
					log = append(log, core.Message{Role: core.RoleTool, Content: fmt.Sprintf("message %d of %s", len(log), c.id)})
				}
			}
			st := baseState("q", log[:len(log):len(log)])
			st.Counters.Steps = seq
			a := withAction([]string{"model", "helper", "tools"}[rng.IntN(3)], st)
			w := s
			if rng.IntN(10) == 0 { // another store on the database: it reads segments back
				w = other
			}
			// The writer takes the run over from the other store when it
			// was the last to write.
			err := w.Checkpoint(ctx, leaseOf(t, w, c.id), store.Checkpoint{Seq: seq, Action: a})
			if errors.Is(err, store.ErrLeaseLost) {
				forgetLease(w, c.id)
				err = w.Checkpoint(ctx, leaseOf(t, w, c.id), store.Checkpoint{Seq: seq, Action: a})
			}
			must(t, err)
			want = append(want, a.Next())
			actions = append(actions, a)
		}
		for seq := range want {
			rec, err := s.LoadStep(ctx, c.id, seq)
			if err != nil {
				t.Fatalf("%s step %d: %v", c.id, seq, err)
			}
			sameStep(t, rec, seq, want[seq], actions[seq], nil)
		}
		n := 0
		if err := s.Steps(ctx, c.id, func(rec store.StepRecord) error {
			sameStep(t, rec, n, want[n], actions[n], nil)
			n++
			return nil
		}); err != nil || n != len(want) {
			t.Fatalf("%s: Steps: %d steps, %v", c.id, n, err)
		}
		if h.Segments != nil {
			if segs := h.Segments(t, s, c.id); c.id == "dense" && segs != 3 || c.id == "empty" && segs != 0 {
				t.Fatalf("%s: %d segments", c.id, segs)
			}
		}
		// A fork from the end: its step 0 holds the whole log.
		last := want[len(want)-1]
		fork := c.id + "-fork"
		if _, err := s.CreateRun(ctx, store.NewRun{ID: fork, Initial: last, ParentID: c.id, ParentStep: c.steps}); err != nil {
			t.Fatal(err)
		}
		st := last
		for seq := 1; seq <= codec.SegmentSteps+1; seq++ {
			st.Messages = append(st.Messages[:len(st.Messages):len(st.Messages)], core.Message{Role: core.RoleUser, Content: "more"})
			a := withAction("model", st)
			must(t, s.Checkpoint(ctx, leaseOf(t, s, fork), store.Checkpoint{Seq: seq, Action: a}))
			st = a.Next()
		}
		rec, err := s.LoadLatest(ctx, fork)
		must(t, err)
		sameStep(t, rec, codec.SegmentSteps+1, st, withAction("model", st), nil)
	}
}

// exportRun stores run id of steps turnSteps with a tool list, intents, an
// agent change and a status set outside a checkpoint, and returns its
// checkpoints.
func exportRun(t *testing.T, s store.Store, id string, steps int) []store.Checkpoint {
	t.Helper()
	ctx := context.Background()
	log := newRun(t, s, id).Messages
	tools := []core.Tool{{Name: "search", Description: "searches", Parameters: json.RawMessage(`{"type":"object"}`)}}
	var cps []store.Checkpoint
	for seq := 1; seq <= steps; seq++ {
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 120)
		if m, ok := cp.Action.(core.RequestModelCall); ok {
			m.Tools = tools
			cp.Action = m
		}
		must(t, s.Checkpoint(ctx, leaseOf(t, s, id), cp))
		cps = append(cps, cp)
		if seq == 7 {
			l := leaseOf(t, s, id)
			must(t, errors.Join(
				s.RecordIntent(ctx, l, 7, core.ToolCall{ID: "c7", Name: "search", Args: []byte(`{"q":"topic 7"}`)}),
				s.RecordOutcome(ctx, l, 7, core.ToolResult{CallID: "c7", Output: "found"}),
				s.RecordIntent(ctx, l, 7, core.ToolCall{ID: "c8", Name: "search"}),
				s.ChangeAgent(ctx, l, []byte(`{"name":"agent","v":2}`)),
			))
		}
	}
	must(t, s.SetStatus(ctx, leaseOf(t, s, id), store.StatusChange{Status: store.StatusInterrupted, Reason: "SIGTERM"}))
	return cps
}

// testExportImportSteps: a run past a segment exports, imports into
// another store and exports again to the same bytes; every step loads
// there byte for byte, its run info and intents are the same, it goes on,
// it imports again under another id; the file is readable.
func testExportImportSteps(t *testing.T, h Harness) {
	ctx := context.Background()
	src := open(t, h, nil)
	cps := exportRun(t, src, "r", codec.SegmentSteps+7)
	var first bytes.Buffer
	must(t, src.Export(ctx, "r", &first))
	dst := open(t, h, nil)
	id, err := dst.Import(ctx, bytes.NewReader(first.Bytes()))
	if err != nil || id != "r" {
		t.Fatalf("import: %q, %v", id, err)
	}
	var second bytes.Buffer
	must(t, dst.Export(ctx, "r", &second))
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("export after import differs:\n%s\n---\n%s", first.String(), second.String())
	}
	for i, cp := range cps {
		rec, err := dst.LoadStep(ctx, "r", i+1)
		must(t, err)
		sameStep(t, rec, i+1, cp.Action.Next(), cp.Action, cp.Result)
	}
	if h.Segments != nil {
		if segs := h.Segments(t, dst, "r"); segs != 1 {
			t.Fatalf("the import wrote %d segments, want 1", segs)
		}
	}
	a, _ := src.Run(ctx, "r")
	b, _ := dst.Run(ctx, "r")
	if a.Created != b.Created || a.Updated != b.Updated || a.Status != b.Status || a.Reason != b.Reason || !bytes.Equal(a.Config, b.Config) ||
		!bytes.Equal(a.StartConfig, b.StartConfig) {
		t.Fatalf("run info differs:\n%+v\n%+v", a, b)
	}
	in, err := dst.Intents(ctx, "r", 7)
	if err != nil || len(in) != 2 || in[0].State != store.IntentCompleted || in[1].State != store.IntentStarted {
		t.Fatalf("intents after import: %+v, %v", in, err)
	}
	// The imported run continues.
	next, _ := turnStep(cps[len(cps)-1].Action.Next().Messages, len(cps)+1, 120)
	must(t, dst.Checkpoint(ctx, leaseOf(t, dst, "r"), next))
	if _, err := dst.Import(ctx, bytes.NewReader(first.Bytes())); !errors.Is(err, store.ErrExists) {
		t.Fatalf("import over an existing run: %v", err)
	}
	// ImportAs, for the stores that have it (both of ours).
	if ia, ok := dst.(interface {
		ImportAs(context.Context, io.Reader, string) (string, error)
	}); ok {
		if id, err := ia.ImportAs(ctx, bytes.NewReader(first.Bytes()), "copy"); err != nil || id != "copy" {
			t.Fatalf("import as: %q, %v", id, err)
		}
		if _, err := dst.LoadLatest(ctx, "copy"); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Export(ctx, "nope", new(bytes.Buffer)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("export of an unknown run: %v", err)
	}
	// The file is readable.
	for _, want := range []string{`"format":"stepwise-run"`, `"describe":{"result":"results c5 ok`, `"action":"tools c1 search`, `"describe":"tool(c5):`} {
		if !strings.Contains(first.String(), want) {
			t.Errorf("export lacks %s", want)
		}
	}
}

// testImportValidates: a file with a flipped state, missing steps, no
// JSON or an unknown field is refused, leaving nothing behind.
func testImportValidates(t *testing.T, h Harness) {
	ctx := context.Background()
	src := open(t, h, nil)
	log := newRun(t, src, "r").Messages
	for seq := 1; seq <= 3; seq++ {
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 50)
		must(t, src.Checkpoint(ctx, leaseOf(t, src, "r"), cp))
	}
	var buf bytes.Buffer
	must(t, src.Export(ctx, "r", &buf))
	good := buf.Bytes()
	dst := open(t, h, nil)
	for name, file := range map[string][]byte{
		"flipped state": flipState(t, good),
		"missing steps": []byte(strings.Replace(string(good), `"steps":4`, `"steps":5`, 1)),
		"not json":      []byte("{"),
		"unknown field": []byte(`{"format":"stepwise-run","version":1,"extra":1}`),
	} {
		if _, err := dst.Import(ctx, bytes.NewReader(file)); err == nil {
			t.Errorf("%s: imported", name)
		} else if _, err := dst.Run(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: a refused import left the run behind", name)
		}
	}
	if _, err := dst.Import(ctx, bytes.NewReader(good)); err != nil {
		t.Fatalf("the good file after the refused ones: %v", err)
	}
}

// flipState flips a byte of step 2's state in an export, leaving its
// checksum as it was.
func flipState(t *testing.T, file []byte) []byte {
	t.Helper()
	var f map[string]any
	must(t, json.Unmarshal(file, &f))
	st := f["steps"].([]any)[2].(map[string]any)
	b, err := base64.StdEncoding.DecodeString(st["state"].(string))
	must(t, err)
	b[3] ^= 1
	st["state"] = base64.StdEncoding.EncodeToString(b)
	out, _ := json.Marshal(f)
	return out
}
