package store

import (
	"context"
	"fmt"
	"time"
)

// AgentChange is a change of the agent a run is driven by (resume --agent):
// from the step after Seq on, the run follows Config.
type AgentChange struct {
	// Seq is the run's last step when the change was made.
	Seq     int
	Created time.Time // UTC
	Config  []byte
}

// ChangeAgent records that the run is driven by config from its next step
// on, while l is the run's lease (ErrLeaseLost otherwise). The run's
// RunInfo.Config becomes config; the config it started with, and every
// change, stay recorded (AgentChanges), so a replay follows them.
func (s *SQLite) ChangeAgent(ctx context.Context, l Lease, config []byte) error {
	if config == nil {
		config = []byte{}
	}
	return s.write(ctx, "run "+l.RunID+": change agent", func(tx *wtx) error {
		rk, status, err := fence(ctx, tx, l)
		if err != nil {
			return err
		}
		if status.Ended() {
			return fmt.Errorf("%w (%s)", ErrEnded, status)
		}
		var last int
		if err := tx.QueryRowContext(ctx, `SELECT max(seq) FROM steps WHERE id BETWEEN ? AND ?`, rowKey(rk, 0), rowKey(rk, maxSeq)).Scan(&last); err != nil {
			return err
		}
		now := s.now().UnixNano()
		_, err = tx.ExecContext(ctx, `INSERT INTO agent_changes (rk, seq, created_ns, config, sum) VALUES (?, ?, ?, ?, ?)`,
			rk, last, now, config, agentChangeSum(rk, last, now, config))
		return err
	})
}

// AgentChanges returns the run's agent changes in the order they were made.
func (s *SQLite) AgentChanges(ctx context.Context, runID string) ([]AgentChange, error) {
	var rk int64
	if err := s.r.QueryRowContext(ctx, `SELECT rk FROM runs WHERE id = ?`, runID).Scan(&rk); err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, notFound(err))
	}
	return agentChanges(ctx, s.r, runID, rk)
}

func agentChanges(ctx context.Context, q querier, runID string, rk int64) ([]AgentChange, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, created_ns, config, sum FROM agent_changes WHERE rk = ? ORDER BY ord`, rk)
	if err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	defer rows.Close()
	var out []AgentChange
	for rows.Next() {
		var c AgentChange
		var created, sum int64
		if err := rows.Scan(&c.Seq, &created, &c.Config, &sum); err != nil {
			return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
		}
		if c.Config == nil {
			c.Config = []byte{}
		}
		if agentChangeSum(rk, c.Seq, created, c.Config) != sum {
			return nil, fmt.Errorf("%w: run %s: the agent change at step %d fails its checksum", ErrCorrupt, runID, c.Seq)
		}
		c.Created = fromNs(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	return out, nil
}

func agentChangeSum(rk int64, seq int, created int64, config []byte) int64 {
	var h summer
	h.int(rk)
	h.int(int64(seq))
	h.int(created)
	h.blob(config)
	return h.sum()
}
