package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// blobWrites stores, within one transaction, the bodies stored once (see
// codec.Blobs), and remembers them in the store once it committed.
type blobWrites struct {
	s       *Postgres
	digests [][]byte
}

// queue queues the insert of body under digest, unless it is there already.
func (w *blobWrites) queue(b *pgx.Batch, digest, body []byte) {
	b.Queue(`INSERT INTO blobs (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING`, digest, body)
	w.digests = append(w.digests, digest)
}

// put stores body under digest in tx, unless it is there already.
func (w *blobWrites) put(ctx context.Context, tx pgx.Tx, digest, body []byte) error {
	if _, err := tx.Exec(ctx, `INSERT INTO blobs (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING`, digest, body); err != nil {
		return fmt.Errorf("store a shared body: %w", err)
	}
	w.digests = append(w.digests, digest)
	return nil
}

// config splits config (codec.Blobs.SplitConfig), storing its body in tx
// when fresh; it returns the inline part and the digest (nil: inline).
func (w *blobWrites) config(ctx context.Context, tx pgx.Tx, config []byte) (inline, ref []byte, err error) {
	inline, ref, fresh := w.s.blobs.SplitConfig(config)
	if fresh != nil {
		err = w.put(ctx, tx, ref, fresh)
	}
	return nonNil(inline), ref, err
}

// committed records the bodies written, once the transaction committed.
func (w *blobWrites) committed() {
	for _, d := range w.digests {
		w.s.blobs.Stored(d)
	}
}

// blobLoader reads shared bodies through q (a run's first message).
func (s *Postgres) blobLoader(ctx context.Context, q querier) codec.Load {
	return func(digest []byte) ([]byte, error) {
		return s.blobs.Resolve(digest, func(d []byte) ([]byte, error) {
			var body []byte
			err := q.QueryRow(ctx, `SELECT body FROM blobs WHERE digest = $1`, d).Scan(&body)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, fmt.Errorf("%w: the shared body %x is missing", store.ErrCorrupt, d[:6])
			}
			return body, err
		})
	}
}

// storedConfig is the SQL of a config column stored by digest or inline:
// NULL when its body is missing.
func storedConfig(table string) string {
	return `CASE WHEN ` + table + `.config_ref IS NULL THEN ` + table + `.config ELSE (SELECT b.body FROM blobs b WHERE b.digest = ` + table + `.config_ref) END`
}
