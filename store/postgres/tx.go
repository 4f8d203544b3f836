package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// querier runs queries: the pool, a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// inTx runs a transaction whose first statements are sent with its BEGIN in
// one round trip: queue adds them to the batch, then fn reads their results
// from br (closing it before it uses tx) and runs the rest on tx. The
// transaction commits when fn returns nil and rolls back otherwise. fn's
// error is returned as is; errors of the transaction itself are wrapped
// with what (unless it is empty).
func (s *Postgres) inTx(ctx context.Context, what string, opts pgx.TxOptions, queue func(*pgx.Batch), fn func(br pgx.BatchResults, tx pgx.Tx) error) error {
	wrap := func(err error) error {
		if what == "" {
			return err
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	b := &pgx.Batch{}
	b.BeginTx(opts)
	queue(b)
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := br.Exec(); err != nil { // BEGIN
		br.Close()
		return wrap(err)
	}
	if err := fn(br, tx); err != nil {
		br.Close()
		return err
	}
	if err := br.Close(); err != nil {
		return wrap(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return wrap(err)
	}
	return nil
}

// readSnapshot is the transaction of reads that must see one snapshot.
var readSnapshot = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
