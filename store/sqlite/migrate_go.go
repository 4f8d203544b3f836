package sqlite

import (
	"context"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// goMigrations are the Go parts of migrations, by version: each runs after
// its migration's SQL, in the same transaction.
var goMigrations = map[int]func(context.Context, *wtx) error{
	3: migrateCompactSteps,
}

// migrateCompactSteps converts the step rows of the first layout (four
// blobs: action, result, head, msgs) into steps_new (one body, see
// store/internal/codec), moving model calls' tool lists into tool_lists,
// and compresses the segments. Every row's old checksum is verified first:
// a corrupt row stops the migration rather than being copied under a
// fresh checksum.
func migrateCompactSteps(ctx context.Context, tx *wtx) error {
	rows, err := tx.QueryContext(ctx, `SELECT rk, seq, created_ns, msg_count, msg_sum, action, result, head, msgs, sum FROM steps ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	lists := map[string][]byte{}
	for rows.Next() {
		var rk, sum int64
		var r codec.Row
		if err := rows.Scan(&rk, &r.Seq, &r.Created, &r.MsgCount, &r.MsgSum, &r.Action, &r.Result, &r.Head, &r.Msgs, &sum); err != nil {
			return err
		}
		if codec.LegacyStepSum(rk, r.Seq, r.Created, r.MsgCount, r.MsgSum, r.Action, r.Result, r.Head, r.Msgs) != sum {
			return fmt.Errorf("%w: run key %d step %d fails its checksum", store.ErrCorrupt, rk, r.Seq)
		}
		if r.Action != nil {
			// A primary model call is stored without its messages, so
			// no state is needed to take its tools out.
			a, err := core.DecodeAction(r.Action, core.State{})
			if err != nil {
				return fmt.Errorf("run key %d step %d: %w", rk, r.Seq, err)
			}
			if m, ok := a.(core.RequestModelCall); ok && len(m.Tools) > 0 {
				body := core.AppendTools(nil, m.Tools)
				r.Tools = codec.ToolListSum(body)
				lists[string(r.Tools)] = body
				m.Tools = nil
				if r.Action, err = core.EncodeAction(m); err != nil {
					return err
				}
			}
		}
		r.Seal()
		r.Sum = codec.StepSum(rk, &r)
		if _, err := tx.ExecContext(ctx, `INSERT INTO steps_new (id, rk, seq, created_ns, msg_count, msg_sum, body, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, rowKey(rk, r.Seq), rk, r.Seq, r.Created, r.MsgCount, r.MsgSum, r.Body, r.Sum); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for d, body := range lists {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO tool_lists (digest, body) VALUES (?, ?)`, []byte(d), body); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE steps`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE steps_new RENAME TO steps`); err != nil {
		return err
	}
	segs, err := tx.QueryContext(ctx, `SELECT rk, seq_from, seq_to, first, n, body, sum FROM segments ORDER BY id`)
	if err != nil {
		return err
	}
	var all []struct {
		rk int64
		sg codec.Segment
	}
	for segs.Next() {
		var rk int64
		var sg codec.Segment
		if err := segs.Scan(&rk, &sg.From, &sg.To, &sg.First, &sg.N, &sg.Body, &sg.Sum); err != nil {
			segs.Close()
			return err
		}
		if codec.SegmentSum(rk, sg.From, sg.To, sg.First, sg.N, sg.Body) != sg.Sum {
			segs.Close()
			return fmt.Errorf("%w: run key %d: the segment of steps %d-%d fails its checksum", store.ErrCorrupt, rk, sg.From, sg.To)
		}
		all = append(all, struct {
			rk int64
			sg codec.Segment
		}{rk, codec.NewSegment(rk, sg.From, sg.To, sg.First, sg.N, sg.Body)})
	}
	segs.Close()
	for _, x := range all {
		if _, err := tx.ExecContext(ctx, `UPDATE segments SET body = ?, sum = ? WHERE id = ?`, x.sg.Body, x.sg.Sum, rowKey(x.rk, x.sg.From)); err != nil {
			return err
		}
	}
	return nil
}
