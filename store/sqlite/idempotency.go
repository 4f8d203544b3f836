package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

var _ store.Idempotency = (*SQLite)(nil)

// ClaimKey records k unless its key is recorded (then it returns that
// record, or takes over a stale claim), removing the keys older than
// store.IdempotencyTTL, in one transaction.
func (s *SQLite) ClaimKey(ctx context.Context, k store.IdempotencyKey, stale time.Duration) (rec store.IdempotencyKey, claimed bool, err error) {
	err = s.write(ctx, "idempotency key", func(tx *wtx) error {
		now := s.now()
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE created_ns <= ?`, now.Add(-store.IdempotencyTTL).UnixNano()); err != nil {
			return err
		}
		var created int64
		rec = store.IdempotencyKey{Scope: k.Scope, Key: k.Key}
		err := tx.QueryRowContext(ctx, `SELECT digest, ref, status, body, created_ns FROM idempotency WHERE scope = ? AND key = ?`, k.Scope, k.Key).
			Scan(&rec.Digest, &rec.Ref, &rec.Status, &rec.Body, &created)
		if err == nil {
			rec.Created = time.Unix(0, created).UTC()
			if rec.Status == 0 && rec.Digest == k.Digest && !rec.Created.After(now.Add(-stale)) {
				claimed, rec.Created = true, now.UTC()
				_, err = tx.ExecContext(ctx, `UPDATE idempotency SET created_ns = ? WHERE scope = ? AND key = ?`, now.UnixNano(), k.Scope, k.Key)
			}
			return err
		}
		if err = notFound(err); err != store.ErrNotFound {
			return err
		}
		rec, claimed = k, true
		rec.Status, rec.Body, rec.Created = 0, nil, now.UTC()
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency (scope, key, digest, ref, created_ns) VALUES (?, ?, ?, ?, ?)`,
			k.Scope, k.Key, k.Digest, k.Ref, now.UnixNano())
		return err
	})
	if err != nil {
		return store.IdempotencyKey{}, false, err
	}
	return rec, claimed, nil
}

// SettleKey stores a claimed key's response.
func (s *SQLite) SettleKey(ctx context.Context, scope, key string, status int, body []byte) error {
	return s.write(ctx, "idempotency key", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE idempotency SET status = ?, body = ? WHERE scope = ? AND key = ?`, status, body, scope, key)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("%s: %w", key, store.ErrNotFound)
		}
		return err
	})
}

// DropKey forgets a key.
func (s *SQLite) DropKey(ctx context.Context, scope, key string) error {
	return s.write(ctx, "idempotency key", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE scope = ? AND key = ?`, scope, key)
		return err
	})
}
