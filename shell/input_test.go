package shell_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// An input over the agent's InputLimit (a quarter of its state limit) is
// refused by Runner.Start and Pool.Create before anything is stored; one
// at the limit is taken; a larger state limit raises it.
func TestInputOverItsLimitIsRefusedUnstored(t *testing.T) {
	db := openStore(t)
	ag := newAgent(t, scripted(t, `{"text":"ok"}`, `{"text":"ok"}`))
	limit := shell.InputLimit(ag.Config)
	if limit != 2<<20 {
		t.Fatalf("the default input limit is %d, want 2 MiB", limit)
	}
	r := shell.NewRunner(db, nil)
	big := strings.Repeat("x", limit+1)
	if _, err := r.Start(context.Background(), ag, big); !errors.Is(err, shell.ErrInputTooLarge) || !strings.Contains(err.Error(), "2097153 bytes, over the limit of 2097152") {
		t.Fatalf("Start: %v", err)
	}
	if _, err := r.Pool().Create(context.Background(), ag, big); !errors.Is(err, shell.ErrInputTooLarge) {
		t.Fatalf("Create: %v", err)
	}
	if runs, err := db.ListRuns(context.Background(), store.Filter{}); err != nil || len(runs) != 0 {
		t.Fatalf("stored %d runs (%v)", len(runs), err)
	}
	out, err := r.Start(context.Background(), ag, big[:limit])
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("an input at the limit: %+v, %v", out, err)
	}
	ag.Config.Limits.MaxStateBytes = 32 << 20
	if got := shell.InputLimit(ag.Config); got != 8<<20 {
		t.Errorf("with a 32 MiB state limit the input limit is %d, want 8 MiB", got)
	}
}
