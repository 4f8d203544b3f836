package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
)

var _ store.Idempotency = (*Postgres)(nil)

// ClaimKey records k unless its key is recorded (then it returns that
// record, or takes over a stale claim), removing the keys older than
// store.IdempotencyTTL. Two claims racing on one key: the insert (or the
// take-over's update) of one wins, the other reads its record.
func (s *Postgres) ClaimKey(ctx context.Context, k store.IdempotencyKey, stale time.Duration) (rec store.IdempotencyKey, claimed bool, err error) {
	now := s.now()
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency WHERE created_ns <= $1`, now.Add(-store.IdempotencyTTL).UnixNano()); err != nil {
		return rec, false, fmt.Errorf("idempotency key: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency (scope, key, digest, ref, created_ns) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, key) DO NOTHING`,
		k.Scope, k.Key, k.Digest, k.Ref, now.UnixNano())
	if err != nil {
		return rec, false, fmt.Errorf("idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		rec = k
		rec.Status, rec.Body, rec.Created = 0, nil, now.UTC()
		return rec, true, nil
	}
	// A stale claim is taken over by one update: of racing claimers, the
	// one whose update matched the row wins.
	rec = store.IdempotencyKey{Scope: k.Scope, Key: k.Key, Digest: k.Digest}
	err = s.pool.QueryRow(ctx, `UPDATE idempotency SET created_ns = $1 WHERE scope = $2 AND key = $3 AND status = 0 AND digest = $4 AND created_ns <= $5 RETURNING ref`,
		now.UnixNano(), k.Scope, k.Key, k.Digest, now.Add(-stale).UnixNano()).Scan(&rec.Ref)
	if err == nil {
		rec.Created = now.UTC()
		return rec, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.IdempotencyKey{}, false, fmt.Errorf("idempotency key: %w", err)
	}
	var created int64
	rec = store.IdempotencyKey{Scope: k.Scope, Key: k.Key}
	err = s.pool.QueryRow(ctx, `SELECT digest, ref, status, body, created_ns FROM idempotency WHERE scope = $1 AND key = $2`, k.Scope, k.Key).
		Scan(&rec.Digest, &rec.Ref, &rec.Status, &rec.Body, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%s: %w (dropped while claimed)", k.Key, store.ErrNotFound)
	}
	if err != nil {
		return store.IdempotencyKey{}, false, fmt.Errorf("idempotency key: %w", err)
	}
	rec.Created = time.Unix(0, created).UTC()
	return rec, false, nil
}

// SettleKey stores a claimed key's response.
func (s *Postgres) SettleKey(ctx context.Context, scope, key string, status int, body []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE idempotency SET status = $1, body = $2 WHERE scope = $3 AND key = $4`, status, body, scope, key)
	if err != nil {
		return fmt.Errorf("idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("idempotency key %s: %w", key, store.ErrNotFound)
	}
	return nil
}

// DropKey forgets a key.
func (s *Postgres) DropKey(ctx context.Context, scope, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency WHERE scope = $1 AND key = $2`, scope, key); err != nil {
		return fmt.Errorf("idempotency key: %w", err)
	}
	return nil
}
