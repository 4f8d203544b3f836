package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Export writes the run as one portable file (see store.Runs and
// store/doc.go), from one snapshot. On an error (a corrupt step) what it
// wrote so far is incomplete.
func (s *SQLite) Export(ctx context.Context, runID string, w io.Writer) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	defer rollback(tx)
	var rk int64
	var r codec.RunRow
	var status, failCode string
	err = tx.QueryRowContext(ctx, `SELECT r.rk, r.id, r.agent, r.config_hash, `+startConfig+`, r.input, r.status, r.created_ns,
		max(r.updated_ns, s.created_ns),
		r.answer, r.fail_code, r.reason, r.parent_id, r.parent_step, r.retry_ns, s.seq FROM runs r JOIN steps s ON s.id = `+lastStepID+`
		WHERE r.id = ?`, runID).Scan(
		&rk, &r.ID, &r.Agent, &r.ConfigHash, &r.Config, &r.Input, &status, &r.Created, &r.Updated,
		&r.Answer, &failCode, &r.Reason, &r.ParentID, &r.ParentStep, &r.Retry, &r.LastSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("export run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	r.Status, r.FailCode = store.Status(status), core.FailCode(failCode)
	intents, err := runIntents(ctx, tx, runID, rk)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	changes, err := changeRows(ctx, tx, runID, rk)
	if err != nil {
		return fmt.Errorf("export run %s: %w", runID, err)
	}
	e, err := codec.Begin(w, r, changes, intents)
	if err != nil {
		return err
	}
	err = s.iterateSteps(ctx, tx, runID, rk, true, func(rec store.StepRecord, row *codec.Row, raw [][]byte) error {
		return e.Step(row, rec, raw)
	})
	if err != nil {
		return err
	}
	return e.End()
}

// runIntents reads every intent of the run, by step, in recorded order.
func runIntents(ctx context.Context, tx querier, runID string, rk int64) (map[int][]codec.IntentRow, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, call_id, tool, args, started_ns, result, completed_ns, sum FROM intents
		WHERE rk = ? ORDER BY seq, ord`, rk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int][]codec.IntentRow{}
	for rows.Next() {
		var seq int
		var in codec.IntentRow
		var sum int64
		if err := rows.Scan(&seq, &in.CallID, &in.Tool, &in.Args, &in.Started, &in.Result, &in.Completed, &sum); err != nil {
			return nil, err
		}
		if in.Args == nil {
			in.Args = []byte{}
		}
		if codec.IntentSum(rk, seq, in.CallID, in.Tool, in.Args, in.Started, in.Result, in.Completed) != sum {
			return nil, fmt.Errorf("%w: run %s step %d: intent %s fails its checksum", store.ErrCorrupt, runID, seq, in.CallID)
		}
		out[seq] = append(out[seq], in)
	}
	return out, rows.Err()
}

// changeRows reads the run's agent changes as the export writes them.
func changeRows(ctx context.Context, q querier, runID string, rk int64) ([]codec.ChangeRow, error) {
	changes, err := agentChanges(ctx, q, runID, rk)
	if err != nil {
		return nil, err
	}
	out := make([]codec.ChangeRow, len(changes))
	for i, c := range changes {
		out[i] = codec.ChangeRow{Seq: c.Seq, Created: c.Created.UnixNano(), Config: c.Config}
	}
	return out, nil
}

// Import reads a file written by Export and stores the run under the id it
// carries (see store.Runs).
func (s *SQLite) Import(ctx context.Context, r io.Reader) (string, error) {
	return s.ImportAs(ctx, r, "")
}

// ImportAs is Import storing the run under id instead (the file's id when id
// is empty).
func (s *SQLite) ImportAs(ctx context.Context, r io.Reader, id string) (string, error) {
	p, err := codec.ReadImport(r, id)
	if err != nil {
		return "", err
	}
	id = p.Run.ID
	err = s.write(ctx, "import run "+id, func(tx *wtx) error {
		rk, err := s.insertRun(ctx, tx, p.Run)
		if err != nil {
			return err
		}
		for d, body := range p.ToolLists {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO tool_lists (digest, body) VALUES (?, ?)`, []byte(d), body); err != nil {
				return fmt.Errorf("tool list: %w", err)
			}
		}
		for _, c := range p.Changes {
			if err := s.insertChange(ctx, tx, rk, c.Seq, c.Created, c.Config); err != nil {
				return fmt.Errorf("agent change: %w", err)
			}
		}
		for i := range p.Rows {
			row := &p.Rows[i]
			if err := tx.insertStep(row, rk); err != nil {
				return fmt.Errorf("step %d: %w", row.Seq, err)
			}
			if codec.ClosesSegment(row.Seq) {
				if err := writeSegment(ctx, tx, id, rk, row); err != nil {
					return fmt.Errorf("step %d: %w", row.Seq, err)
				}
			}
			for _, in := range p.Intents[i] {
				if _, err := tx.ExecContext(ctx, `INSERT INTO intents (rk, seq, call_id, tool, args, started_ns, result, completed_ns, sum)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, rk, row.Seq, in.CallID, in.Tool, in.Args, in.Started, in.Result, in.Completed,
					codec.IntentSum(rk, row.Seq, in.CallID, in.Tool, in.Args, in.Started, in.Result, in.Completed)); err != nil {
					return fmt.Errorf("step %d: intent %s: %w", row.Seq, in.CallID, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}
