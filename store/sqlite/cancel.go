package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/store"
)

// RequestCancel records a cancellation for the run's driver (see
// store.Runs).
func (s *SQLite) RequestCancel(ctx context.Context, runID, reason string) error {
	if reason == "" {
		return fmt.Errorf("run %s: request cancel: no reason", runID)
	}
	return s.write(ctx, "run "+runID+": request cancel", func(tx *wtx) error {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if store.Status(status).Ended() {
			return store.ErrEnded
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET cancel_reason = ? WHERE id = ?`, reason, runID)
		return err
	})
}
