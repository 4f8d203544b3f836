package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
)

// RequestCancel records a cancellation for the run's driver (see
// store.Runs): one statement, which tells an ended run from a missing one.
func (s *Postgres) RequestCancel(ctx context.Context, runID, reason string) error {
	if reason == "" {
		return fmt.Errorf("run %s: request cancel: no reason", runID)
	}
	var status *string
	err := s.pool.QueryRow(ctx, `WITH u AS (
		UPDATE runs SET cancel_reason = $2 WHERE id = $1 AND status NOT IN ('completed', 'failed', 'cancelled') RETURNING status)
	SELECT coalesce((SELECT status FROM u), (SELECT status FROM runs WHERE id = $1))`, runID, []byte(reason)).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && status == nil:
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("run %s: request cancel: %w", runID, err)
	}
	if store.Status(*status).Ended() {
		return fmt.Errorf("run %s: %w", runID, store.ErrEnded)
	}
	return nil
}
