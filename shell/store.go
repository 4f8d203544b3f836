package shell

import (
	"context"
	"io"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Store is what the runner needs from persistence. store.SQLite implements
// it; a second backend only has to implement this interface.
type Store interface {
	CreateRun(ctx context.Context, r store.NewRun) error
	Checkpoint(ctx context.Context, runID string, cp store.Checkpoint) error
	SetStatus(ctx context.Context, runID string, status store.Status, reason string) error

	RecordIntent(ctx context.Context, runID string, seq int, call core.ToolCall) error
	RecordOutcome(ctx context.Context, runID string, seq int, res core.ToolResult) error
	Intents(ctx context.Context, runID string, seq int) ([]store.Intent, error)

	Run(ctx context.Context, runID string) (store.RunInfo, error)
	LoadLatest(ctx context.Context, runID string) (store.StepRecord, error)
	LoadStep(ctx context.Context, runID string, seq int) (store.StepRecord, error)
	Steps(ctx context.Context, runID string, fn func(store.StepRecord) error) error
	ListRuns(ctx context.Context, f store.Filter) ([]store.RunInfo, error)

	Export(ctx context.Context, runID string, w io.Writer) error
	Import(ctx context.Context, r io.Reader) (string, error)

	MemorySearch(ctx context.Context, ns, query string, limit int) ([]core.MemoryHit, error)
	MemoryCreate(ctx context.Context, ns string, entities []core.Entity, relations []core.Relation) (core.MemoryCreated, error)
	MemoryTraverse(ctx context.Context, ns, from, relation string, depth int) (core.MemoryTraversed, error)

	Close() error
}

var _ Store = (*store.SQLite)(nil)
