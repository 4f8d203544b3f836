package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// ChangeAgent records that the run is driven by config from its next step
// on, while l is the run's lease (ErrLeaseLost otherwise). The run's
// RunInfo.Config becomes config; the config it started with, and every
// change, stay recorded (AgentChanges), so a replay follows them.
func (s *SQLite) ChangeAgent(ctx context.Context, l store.Lease, config []byte) error {
	if config == nil {
		config = []byte{}
	}
	return s.write(ctx, "run "+l.RunID+": change agent", func(tx *wtx) error {
		rk, status, err := fence(ctx, tx, l)
		if err != nil {
			return err
		}
		if status.Ended() {
			return fmt.Errorf("%w (%s)", store.ErrEnded, status)
		}
		var last int
		if err := tx.QueryRowContext(ctx, `SELECT max(seq) FROM steps WHERE id BETWEEN ? AND ?`, rowKey(rk, 0), rowKey(rk, maxSeq)).Scan(&last); err != nil {
			return err
		}
		now := s.now().UnixNano()
		return s.insertChange(ctx, tx, rk, last, now, config)
	})
}

// insertChange records an agent change of run rk at step seq, its config
// stored once when large enough; its checksum covers the config itself.
func (s *SQLite) insertChange(ctx context.Context, tx *wtx, rk int64, seq int, created int64, config []byte) error {
	inline, ref, err := s.splitConfig(ctx, tx, config)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO agent_changes (rk, seq, created_ns, config, config_ref, sum) VALUES (?, ?, ?, ?, ?, ?)`,
		rk, seq, created, inline, ref, codec.AgentChangeSum(rk, seq, created, config))
	return err
}

// AgentChanges returns the run's agent changes in the order they were made.
func (s *SQLite) AgentChanges(ctx context.Context, runID string) ([]store.AgentChange, error) {
	var rk int64
	if err := s.r.QueryRowContext(ctx, `SELECT rk FROM runs WHERE id = ?`, runID).Scan(&rk); err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, notFound(err))
	}
	return agentChanges(ctx, s.r, runID, rk)
}

func agentChanges(ctx context.Context, q querier, runID string, rk int64) ([]store.AgentChange, error) {
	rows, err := q.QueryContext(ctx, `SELECT a.seq, a.created_ns, `+storedConfig("a")+`, a.sum FROM agent_changes a WHERE a.rk = ? ORDER BY a.ord`, rk)
	if err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	defer rows.Close()
	var out []store.AgentChange
	for rows.Next() {
		var c store.AgentChange
		var created, sum int64
		if err := rows.Scan(&c.Seq, &created, &c.Config, &sum); err != nil {
			return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
		}
		if c.Config == nil {
			c.Config = []byte{}
		}
		if codec.AgentChangeSum(rk, c.Seq, created, c.Config) != sum {
			return nil, fmt.Errorf("%w: run %s: the agent change at step %d fails its checksum", store.ErrCorrupt, runID, c.Seq)
		}
		c.Created = fromNs(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	return out, nil
}

// notFound turns sql.ErrNoRows into store.ErrNotFound and leaves other
// errors.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}
