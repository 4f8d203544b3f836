package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// ChangeAgent records that the run is driven by config from its next step
// on, while l is the run's lease (ErrLeaseLost otherwise). The run's
// RunInfo.Config becomes config; the config it started with, and every
// change, stay recorded (AgentChanges), so a replay follows them. The
// run's row is locked FOR UPDATE, so no step is appended between reading
// the last step and recording the change at it.
func (s *Postgres) ChangeAgent(ctx context.Context, l store.Lease, config []byte) error {
	config = nonNil(config)
	blobs := &blobWrites{s: s}
	err := s.inTx(ctx, "", pgx.TxOptions{}, func(b *pgx.Batch) {
		b.Queue(`SELECT r.rk, r.status, r.lease_owner, r.lease_token, true FROM runs r WHERE r.id = $1 FOR UPDATE`, l.RunID)
		b.Queue(`SELECT max(s.seq) FROM steps s JOIN runs r ON r.rk = s.rk WHERE r.id = $1`, l.RunID)
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		rk, status, err := fencedStep(br.QueryRow(), l, -1)
		if err != nil {
			return err
		}
		if status.Ended() {
			return fmt.Errorf("%w (%s)", store.ErrEnded, status)
		}
		var last *int64
		if err := br.QueryRow().Scan(&last); err != nil {
			return err
		}
		if last == nil {
			return fmt.Errorf("%w: run %s has no steps", store.ErrCorrupt, l.RunID)
		}
		if err := br.Close(); err != nil {
			return err
		}
		now := s.now().UnixNano()
		blobs.digests = nil // a retried transaction starts over
		inline, ref, err := blobs.config(ctx, tx, config)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO agent_changes (rk, seq, created_ns, config, sum, config_ref) VALUES ($1, $2, $3, $4, $5, $6)`,
			rk, *last, now, inline, codec.AgentChangeSum(rk, int(*last), now, config), ref)
		return err
	})
	if err != nil {
		return fmt.Errorf("run %s: change agent: %w", l.RunID, err)
	}
	blobs.committed()
	return nil
}

// AgentChanges returns the run's agent changes in the order they were made.
func (s *Postgres) AgentChanges(ctx context.Context, runID string) ([]store.AgentChange, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT rk FROM runs WHERE id = $1`, runID)
	b.Queue(`SELECT a.seq, a.created_ns, `+storedConfig("a")+`, a.sum FROM agent_changes a JOIN runs r ON r.rk = a.rk WHERE r.id = $1 ORDER BY a.ord`, runID)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var rk int64
	err := br.QueryRow().Scan(&rk)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	return scanChanges(br, runID, rk)
}

// scanChanges reads the run's agent changes, the next result of br,
// verifying each.
func scanChanges(br pgx.BatchResults, runID string, rk int64) ([]store.AgentChange, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
	}
	defer rows.Close()
	var out []store.AgentChange
	for rows.Next() {
		var c store.AgentChange
		var seq, created, sum int64
		if err := rows.Scan(&seq, &created, &c.Config, &sum); err != nil {
			return nil, fmt.Errorf("run %s: agent changes: %w", runID, err)
		}
		c.Seq, c.Config = int(seq), nonNil(c.Config)
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
