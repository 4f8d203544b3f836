package postgres

import (
	"bytes"
	"context"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// TestImportFailsWhole: an import that fails half-way through its
// transaction (here the run's id is free, but its step 3 cannot be
// stored) leaves no row behind. (storetest's ImportValidates refuses
// damaged files before they are written.)
func TestImportFailsWhole(t *testing.T) {
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
	dst := openTest(t)
	exec(t, dst, `ALTER TABLE steps ADD CONSTRAINT no_step_3 CHECK (seq <> 3)`)
	if _, err := dst.Import(ctx, bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("an import whose step 3 cannot be stored succeeded")
	}
	var n int
	if err := dst.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM steps)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a failed import left %d rows (%v)", n, err)
	}
}
