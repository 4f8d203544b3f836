package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Export writes the run as one portable file (see store.Runs and
// store/sqlite/doc.go), from one snapshot: the run, its intents and agent
// changes are read with the transaction's BEGIN in one round trip, then
// its steps a page at a time. On an error (a corrupt step) what it wrote so
// far is incomplete.
func (s *Postgres) Export(ctx context.Context, runID string, w io.Writer) error {
	return s.inTx(ctx, "export run "+runID, readSnapshot, func(b *pgx.Batch) {
		b.Queue(`SELECT r.rk, r.id, r.agent, r.config_hash, `+startConfig+`, r.input, r.status, r.created_ns,
			greatest(r.updated_ns, s.created_ns), r.answer, r.fail_code, r.reason, r.parent_id, r.parent_step, r.retry_ns, s.seq
			FROM runs r`+lastStepJoin+` WHERE r.id = $1`, runID)
		b.Queue(`SELECT i.seq, i.call_id, i.tool, i.args, i.started_ns, i.result, i.completed_ns, i.sum
			FROM intents i JOIN runs r ON r.rk = i.rk WHERE r.id = $1 ORDER BY i.seq, i.ord`, runID)
		b.Queue(`SELECT a.seq, a.created_ns, `+storedConfig("a")+`, a.sum FROM agent_changes a JOIN runs r ON r.rk = a.rk
			WHERE r.id = $1 ORDER BY a.ord`, runID)
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		var rk, parentStep, lastSeq int64
		var r codec.RunRow
		var status, failCode string
		var input, answer, reason []byte
		err := br.QueryRow().Scan(&rk, &r.ID, &r.Agent, &r.ConfigHash, &r.Config, &input, &status, &r.Created, &r.Updated,
			&answer, &failCode, &reason, &r.ParentID, &parentStep, &r.Retry, &lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("export run %s: %w", runID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("export run %s: %w", runID, err)
		}
		r.Input, r.Answer, r.Reason = string(input), string(answer), string(reason)
		r.Status, r.FailCode = store.Status(status), core.FailCode(failCode)
		r.ParentStep, r.LastSeq = int(parentStep), int(lastSeq)
		intents, err := runIntents(br, runID, rk)
		if err != nil {
			return fmt.Errorf("export run %s: %w", runID, err)
		}
		changes, err := scanChanges(br, runID, rk)
		if err != nil {
			return fmt.Errorf("export run %s: %w", runID, err)
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("export run %s: %w", runID, err)
		}
		rows := make([]codec.ChangeRow, len(changes))
		for i, c := range changes {
			rows[i] = codec.ChangeRow{Seq: c.Seq, Created: c.Created.UnixNano(), Config: c.Config}
		}
		e, err := codec.Begin(w, r, rows, intents)
		if err != nil {
			return err
		}
		err = s.iterateSteps(ctx, tx, runID, rk, 0, nil, true, func(rec store.StepRecord, row *codec.Row, raw [][]byte) error {
			return e.Step(row, rec, raw)
		})
		if err != nil {
			return err
		}
		return e.End()
	})
}

// runIntents reads every intent of the run (the next result of br), by
// step, in recorded order, verifying each.
func runIntents(br pgx.BatchResults, runID string, rk int64) (map[int][]codec.IntentRow, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int][]codec.IntentRow{}
	for rows.Next() {
		var seq int64
		var in codec.IntentRow
		var callID, tool []byte
		var sum int64
		if err := rows.Scan(&seq, &callID, &tool, &in.Args, &in.Started, &in.Result, &in.Completed, &sum); err != nil {
			return nil, err
		}
		in.CallID, in.Tool, in.Args = string(callID), string(tool), nonNil(in.Args)
		if codec.IntentSum(rk, int(seq), in.CallID, in.Tool, in.Args, in.Started, in.Result, in.Completed) != sum {
			return nil, fmt.Errorf("%w: run %s step %d: intent %s fails its checksum", store.ErrCorrupt, runID, seq, in.CallID)
		}
		out[int(seq)] = append(out[int(seq)], in)
	}
	return out, rows.Err()
}

// Import reads a file written by Export and stores the run under the id it
// carries (see store.Runs).
func (s *Postgres) Import(ctx context.Context, r io.Reader) (string, error) {
	return s.ImportAs(ctx, r, "")
}

// ImportAs is Import storing the run under id instead (the file's id when id
// is empty). Everything is checked before anything is written, then written
// in one transaction: the run, then its tool lists, agent changes, steps,
// segments and intents in one pipelined batch.
func (s *Postgres) ImportAs(ctx context.Context, r io.Reader, id string) (string, error) {
	p, err := codec.ReadImport(r, id)
	if err != nil {
		return "", err
	}
	id = p.Run.ID
	blobs := &blobWrites{s: s}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rk, _, err := insertRun(ctx, tx, p.Run, blobs)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for d, body := range p.ToolLists {
			b.Queue(`INSERT INTO tool_lists (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING`, []byte(d), body)
		}
		for _, c := range p.Changes {
			inline, ref, fresh := s.blobs.SplitConfig(c.Config)
			if fresh != nil {
				blobs.queue(b, ref, fresh)
			}
			b.Queue(`INSERT INTO agent_changes (rk, seq, created_ns, config, sum, config_ref) VALUES ($1, $2, $3, $4, $5, $6)`,
				rk, int64(c.Seq), c.Created, nonNil(inline), codec.AgentChangeSum(rk, c.Seq, c.Created, c.Config), ref)
		}
		for i := range p.Rows {
			row := &p.Rows[i]
			b.Queue(insertStepSQL, stepArgs(row, rk)...)
			if codec.ClosesSegment(row.Seq) {
				// From the rows just checked and written, in memory.
				from := max(codec.SegmentStart(row.Seq)-1, 0)
				sg, ok, err := codec.SegmentFromRows(id, rk, p.Rows[from:row.Seq], row)
				if err != nil {
					return fmt.Errorf("step %d: %w", row.Seq, err)
				}
				if ok {
					b.Queue(`INSERT INTO segments (rk, seq_from, seq_to, first, n, body, sum) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
						rk, int64(sg.From), int64(sg.To), int64(sg.First), int64(sg.N), sg.Body, sg.Sum)
				}
			}
			for _, in := range p.Intents[i] {
				b.Queue(`INSERT INTO intents (rk, seq, call_id, tool, args, started_ns, result, completed_ns, sum)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, rk, int64(row.Seq), []byte(in.CallID), []byte(in.Tool), nonNil(in.Args),
					in.Started, in.Result, in.Completed,
					codec.IntentSum(rk, row.Seq, in.CallID, in.Tool, in.Args, in.Started, in.Result, in.Completed))
			}
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return "", fmt.Errorf("import run %s: %w", id, err)
	}
	blobs.committed()
	return id, nil
}
