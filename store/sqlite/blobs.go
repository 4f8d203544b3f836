package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// putBlob stores body under digest in tx unless it is there already; the
// store remembers it once tx commits.
func (s *SQLite) putBlob(ctx context.Context, tx *wtx, digest, body []byte) error {
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO blobs (digest, body) VALUES (?, ?)`, digest, body); err != nil {
		return fmt.Errorf("store a shared body: %w", err)
	}
	tx.onCommit(func() { s.blobs.Stored(digest) })
	return nil
}

// splitConfig stores config by digest in tx when it is large enough (see
// codec.Blobs) and returns what the row keeps: the inline config and the
// digest (nil when inline).
func (s *SQLite) splitConfig(ctx context.Context, tx *wtx, config []byte) (inline, ref []byte, err error) {
	inline, ref, fresh := s.blobs.SplitConfig(config)
	if fresh != nil {
		err = s.putBlob(ctx, tx, ref, fresh)
	}
	return inline, ref, err
}

// blobLoader reads shared bodies through q (a run's first message).
func (s *SQLite) blobLoader(ctx context.Context, q querier) codec.Load {
	return func(digest []byte) ([]byte, error) {
		return s.blobs.Resolve(digest, func(d []byte) ([]byte, error) {
			var body []byte
			err := q.QueryRowContext(ctx, `SELECT body FROM blobs WHERE digest = ?`, d).Scan(&body)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("%w: the shared body %x is missing", store.ErrCorrupt, d[:6])
			}
			return body, err
		})
	}
}

// storedConfig is the SQL of a config column stored by digest or inline:
// NULL when its body is missing (store.ErrCorrupt to the reader).
func storedConfig(table string) string {
	return `CASE WHEN ` + table + `.config_ref IS NULL THEN ` + table + `.config ELSE (SELECT b.body FROM blobs b WHERE b.digest = ` + table + `.config_ref) END`
}
