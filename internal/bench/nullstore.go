package bench

import (
	"context"
	"errors"
	"io"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// nullStore keeps nothing: the runner over it measures pure orchestration.
type nullStore struct{}

var errNull = errors.New("the null store keeps nothing")

func (nullStore) CreateRun(context.Context, store.NewRun) error                     { return nil }
func (nullStore) Checkpoint(context.Context, string, store.Checkpoint) error        { return nil }
func (nullStore) SetStatus(context.Context, string, store.Status, string) error     { return nil }
func (nullStore) RecordIntent(context.Context, string, int, core.ToolCall) error    { return nil }
func (nullStore) RecordOutcome(context.Context, string, int, core.ToolResult) error { return nil }
func (nullStore) Intents(context.Context, string, int) ([]store.Intent, error)      { return nil, nil }
func (nullStore) Run(context.Context, string) (store.RunInfo, error)                { return store.RunInfo{}, errNull }
func (nullStore) LoadLatest(context.Context, string) (store.StepRecord, error) {
	return store.StepRecord{}, errNull
}
func (nullStore) LoadStep(context.Context, string, int) (store.StepRecord, error) {
	return store.StepRecord{}, errNull
}
func (nullStore) Steps(context.Context, string, func(store.StepRecord) error) error { return errNull }
func (nullStore) ListRuns(context.Context, store.Filter) ([]store.RunInfo, error)   { return nil, nil }
func (nullStore) Export(context.Context, string, io.Writer) error                   { return errNull }
func (nullStore) Import(context.Context, io.Reader) (string, error)                 { return "", errNull }
func (nullStore) MemorySearch(context.Context, string, string, int) ([]core.MemoryHit, error) {
	return nil, nil
}
func (nullStore) MemoryCreate(context.Context, string, []core.Entity, []core.Relation) (core.MemoryCreated, error) {
	return core.MemoryCreated{}, nil
}
func (nullStore) MemoryTraverse(context.Context, string, string, string, int) (core.MemoryTraversed, error) {
	return core.MemoryTraversed{}, nil
}
func (nullStore) Close() error { return nil }
