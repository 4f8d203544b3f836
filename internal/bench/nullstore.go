package bench

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// nullStore keeps nothing: the runner over it measures pure orchestration.
type nullStore struct{}

var errNull = errors.New("the null store keeps nothing")

func (nullStore) CreateRun(_ context.Context, r store.NewRun) (store.Lease, error) {
	return store.Lease{RunID: r.ID, Owner: r.Owner, Token: 1, Expires: time.Now().Add(r.LeaseTTL)}, nil
}
func (nullStore) Acquire(context.Context, string, store.LeaseRequest) (store.Lease, error) {
	return store.Lease{}, errNull
}
func (nullStore) Renew(_ context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	l.Expires = time.Now().Add(ttl)
	return l, nil
}
func (nullStore) Release(context.Context, store.Lease) error { return nil }
func (nullStore) Claim(context.Context, store.LeaseRequest) (store.Lease, error) {
	return store.Lease{}, store.ErrNotFound
}
func (nullStore) Checkpoint(context.Context, store.Lease, store.Checkpoint) error { return nil }
func (nullStore) CheckpointStatus(_ context.Context, _ store.Lease, cp store.Checkpoint) (store.Status, error) {
	return store.StatusOf(cp.Action), nil
}
func (nullStore) SetStatus(context.Context, store.Lease, store.StatusChange) error       { return nil }
func (nullStore) RequestCancel(context.Context, string, string) error                    { return errNull }
func (nullStore) PostMessage(context.Context, string, string) (int, error)               { return 0, errNull }
func (nullStore) Inbox(context.Context, string) ([]store.InboxMessage, error)            { return nil, nil }
func (nullStore) ChangeAgent(context.Context, store.Lease, []byte) error                 { return nil }
func (nullStore) RecordIntent(context.Context, store.Lease, int, core.ToolCall) error    { return nil }
func (nullStore) RecordOutcome(context.Context, store.Lease, int, core.ToolResult) error { return nil }
func (nullStore) RetractIntent(context.Context, store.Lease, int, string) error          { return nil }
func (nullStore) Intents(context.Context, string, int) ([]store.Intent, error)           { return nil, nil }
func (nullStore) Run(context.Context, string) (store.RunInfo, error)                     { return store.RunInfo{}, errNull }
func (nullStore) AgentChanges(context.Context, string) ([]store.AgentChange, error) {
	return nil, errNull
}
func (nullStore) LoadLatest(context.Context, string) (store.StepRecord, error) {
	return store.StepRecord{}, errNull
}
func (nullStore) LoadStep(context.Context, string, int) (store.StepRecord, error) {
	return store.StepRecord{}, errNull
}
func (nullStore) Steps(context.Context, string, func(store.StepRecord) error) error { return errNull }
func (nullStore) StepsFrom(context.Context, string, int, func(store.StepRecord) error) error {
	return errNull
}
func (nullStore) ListRuns(context.Context, store.Filter) ([]store.RunInfo, error) { return nil, nil }
func (nullStore) Export(context.Context, string, io.Writer) error                 { return errNull }
func (nullStore) Import(context.Context, io.Reader) (string, error)               { return "", errNull }
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
