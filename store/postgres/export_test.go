package postgres

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// exportRun stores a run with segments, a tool list, intents, an agent
// change and a status set outside a checkpoint, and returns its store and
// checkpoints.
func exportRun(t *testing.T, s interface {
	store.Runs
}, id string, steps int) []store.Checkpoint {
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
		if err := s.Checkpoint(ctx, leaseOf(t, s, id), cp); err != nil {
			t.Fatal(err)
		}
		cps = append(cps, cp)
		if seq == 7 {
			l := leaseOf(t, s, id)
			for _, err := range []error{
				s.RecordIntent(ctx, l, 7, core.ToolCall{ID: "c7", Name: "search", Args: []byte(`{"q":"topic 7"}`)}),
				s.RecordOutcome(ctx, l, 7, core.ToolResult{CallID: "c7", Output: "found"}),
				s.RecordIntent(ctx, l, 7, core.ToolCall{ID: "c8", Name: "search"}),
				s.ChangeAgent(ctx, l, []byte(`{"name":"agent","v":2}`)),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := s.SetStatus(ctx, leaseOf(t, s, id), store.StatusChange{Status: store.StatusInterrupted, Reason: "SIGTERM"}); err != nil {
		t.Fatal(err)
	}
	return cps
}

func TestExportImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openTest(t)
	cps := exportRun(t, src, "r", codec.SegmentSteps+7)
	var first bytes.Buffer
	if err := src.Export(ctx, "r", &first); err != nil {
		t.Fatal(err)
	}
	dst := openWith(t, nil)
	id, err := dst.Import(ctx, bytes.NewReader(first.Bytes()))
	if err != nil || id != "r" {
		t.Fatalf("import: %q, %v", id, err)
	}
	var second bytes.Buffer
	if err := dst.Export(ctx, "r", &second); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("export after import differs:\n%s\n---\n%s", first.String(), second.String())
	}
	// Every state loads in the new store byte for byte.
	for i, cp := range cps {
		rec, err := dst.LoadStep(ctx, "r", i+1)
		if err != nil {
			t.Fatal(err)
		}
		sameStep(t, rec, i+1, cp.Action.Next(), cp.Action, cp.Result)
	}
	var segs int
	if err := dst.pool.QueryRow(ctx, `SELECT count(*) FROM segments`).Scan(&segs); err != nil || segs != 1 {
		t.Fatalf("the import wrote %d segments, want 1 (%v)", segs, err)
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
	if err := dst.Checkpoint(ctx, leaseOf(t, dst, "r"), next); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, bytes.NewReader(first.Bytes())); !errors.Is(err, store.ErrExists) {
		t.Fatalf("import over an existing run: %v", err)
	}
	if id, err := dst.ImportAs(ctx, bytes.NewReader(first.Bytes()), "copy"); err != nil || id != "copy" {
		t.Fatalf("import as: %q, %v", id, err)
	}
	if _, err := dst.LoadLatest(ctx, "copy"); err != nil {
		t.Fatal(err)
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

func TestImportValidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openTest(t)
	log := newRun(t, src, "r").Messages
	for seq := 1; seq <= 3; seq++ {
		var cp store.Checkpoint
		cp, log = turnStep(log, seq, 50)
		if err := src.Checkpoint(ctx, leaseOf(t, src, "r"), cp); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := src.Export(ctx, "r", &buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	dst := openTest(t)
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
	// A failure half-way through the transaction leaves nothing either:
	// the run's id is free, but its steps cannot be written.
	exec(t, dst, `ALTER TABLE steps ADD CONSTRAINT no_step_3 CHECK (seq <> 3)`)
	if _, err := dst.Import(ctx, bytes.NewReader(good)); err == nil {
		t.Fatal("an import whose step 3 cannot be stored succeeded")
	}
	var n int
	if err := dst.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM steps)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a failed import left %d rows (%v)", n, err)
	}
}

// flipState flips a byte of step 2's state in an export, leaving its
// checksum as it was.
func flipState(t *testing.T, file []byte) []byte {
	t.Helper()
	var f map[string]any
	if err := json.Unmarshal(file, &f); err != nil {
		t.Fatal(err)
	}
	st := f["steps"].([]any)[2].(map[string]any)
	b, err := base64.StdEncoding.DecodeString(st["state"].(string))
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 1
	st["state"] = base64.StdEncoding.EncodeToString(b)
	out, _ := json.Marshal(f)
	return out
}
