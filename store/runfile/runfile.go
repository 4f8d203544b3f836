package runfile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// File is one recorded run read from its export file. It is immutable once
// read and safe for concurrent use.
type File struct {
	// Info describes the run as the file recorded it (LastSeq and Steps
	// from its steps; no lease).
	Info store.RunInfo
	// Changes are the run's agent changes (resume --agent), in order.
	Changes []store.AgentChange
	// Records are the run's steps, step 0 first.
	Records []store.StepRecord
}

// ReadFile reads the export file at path (see Read); errors name the path.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run, err := Read(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return run, nil
}

// Read reads and checks one export file and decodes every step. A file
// that fails a check is store.ErrCorrupt, with the step at fault named.
func Read(r io.Reader) (*File, error) {
	p, err := codec.ReadImport(r, "")
	if err != nil {
		return nil, err
	}
	id := p.Run.ID
	f := &File{Info: store.RunInfo{
		ID: id, Agent: p.Run.Agent, ConfigHash: p.Run.ConfigHash, Config: p.Run.Config, StartConfig: p.Run.Config,
		Input: p.Run.Input, Status: p.Run.Status, Created: codec.FromNs(p.Run.Created), Updated: codec.FromNs(p.Run.Updated),
		Answer: p.Run.Answer, FailCode: p.Run.FailCode, Reason: p.Run.Reason, ParentID: p.Run.ParentID, ParentStep: p.Run.ParentStep,
		LastSeq: p.Run.LastSeq, Steps: p.Run.LastSeq + 1, Turns: p.Run.Turns,
	}}
	for _, c := range p.Changes {
		f.Changes = append(f.Changes, store.AgentChange{Seq: c.Seq, Created: codec.FromNs(c.Created), Config: c.Config})
		f.Info.Config = c.Config
	}
	lists := map[string][]core.Tool{}
	resolve := func(digest []byte) ([]core.Tool, error) {
		if list, ok := lists[string(digest)]; ok {
			return list, nil
		}
		body, ok := p.ToolLists[string(digest)]
		if !ok {
			return nil, fmt.Errorf("%w: the tool list %x is missing", store.ErrCorrupt, digest[:6])
		}
		list, err := core.DecodeTools(body)
		if err != nil {
			return nil, fmt.Errorf("%w: the tool list %x: %w", store.ErrCorrupt, digest[:6], err)
		}
		lists[string(digest)] = list
		return list, nil
	}
	var log []core.Message
	f.Records = make([]store.StepRecord, 0, len(p.Rows))
	for i := range p.Rows {
		row := &p.Rows[i]
		if log, err = row.AppendTo(id, log, nil, nil); err != nil {
			return nil, err
		}
		rec, err := row.Record(id, log, resolve)
		if err != nil {
			return nil, err
		}
		f.Records = append(f.Records, rec)
	}
	return f, nil
}

// errOther reports a request for a run the file does not hold.
func (f *File) errOther(runID string) error {
	return fmt.Errorf("run %s: %w (the file holds run %s)", runID, store.ErrNotFound, f.Info.ID)
}

// Run describes the file's run (store.ErrNotFound for another id).
func (f *File) Run(_ context.Context, runID string) (store.RunInfo, error) {
	if runID != f.Info.ID {
		return store.RunInfo{}, f.errOther(runID)
	}
	return f.Info, nil
}

// AgentChanges returns the run's agent changes in the order made.
func (f *File) AgentChanges(_ context.Context, runID string) ([]store.AgentChange, error) {
	if runID != f.Info.ID {
		return nil, f.errOther(runID)
	}
	return f.Changes, nil
}

// Steps calls fn with every step of the run in order; it stops at the
// first error fn returns and returns it.
func (f *File) Steps(ctx context.Context, runID string, fn func(store.StepRecord) error) error {
	return f.StepsFrom(ctx, runID, 0, fn)
}

// StepsFrom is Steps from step from on.
func (f *File) StepsFrom(ctx context.Context, runID string, from int, fn func(store.StepRecord) error) error {
	if runID != f.Info.ID {
		return f.errOther(runID)
	}
	for _, rec := range f.Records[min(max(from, 0), len(f.Records)):] {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// LoadStep returns step seq of the run (store.ErrNotFound).
func (f *File) LoadStep(_ context.Context, runID string, seq int) (store.StepRecord, error) {
	if runID != f.Info.ID {
		return store.StepRecord{}, f.errOther(runID)
	}
	if seq < 0 || seq >= len(f.Records) {
		return store.StepRecord{}, fmt.Errorf("run %s step %d: %w", runID, seq, store.ErrNotFound)
	}
	return f.Records[seq], nil
}

// LoadLatest returns the run's last step.
func (f *File) LoadLatest(_ context.Context, runID string) (store.StepRecord, error) {
	if runID != f.Info.ID {
		return store.StepRecord{}, f.errOther(runID)
	}
	return f.Records[len(f.Records)-1], nil
}
