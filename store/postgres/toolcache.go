package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

var _ store.ToolCache = (*Postgres)(nil)

// CachedResult returns the tool cache's entry under key unless it has
// expired by the store's clock (store.ErrNotFound then, and when there is
// none); a corrupt entry is store.ErrCorrupt.
func (s *Postgres) CachedResult(ctx context.Context, key string) (store.CachedResult, error) {
	var r codec.CacheRow
	err := s.pool.QueryRow(ctx, `SELECT key, tool, result, stored_ns, expires_ns, sum FROM tool_cache WHERE key = $1 AND expires_ns > $2`,
		key, s.now().UnixNano()).Scan(&r.Key, &r.Tool, &r.Result, &r.StoredNs, &r.ExpiresNs, &r.Sum)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.CachedResult{}, fmt.Errorf("tool cache: %w", err)
	}
	return r.Entry()
}

// CacheResult stores e under e.Key until ttl from now by the store's clock,
// replacing any entry with that key, and removes the other entries that
// have expired, in one statement.
func (s *Postgres) CacheResult(ctx context.Context, e store.CachedResult, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("tool cache: ttl %s is not positive", ttl)
	}
	now := s.now().UnixNano()
	r, err := codec.NewCacheRow(e, now, now+int64(ttl))
	if err != nil {
		return fmt.Errorf("tool cache: %w", err)
	}
	// The expired entry under this key, if any, is replaced by the insert,
	// not deleted by the same statement.
	_, err = s.pool.Exec(ctx, `WITH gone AS (DELETE FROM tool_cache WHERE expires_ns <= $5 AND key <> $1)
		INSERT INTO tool_cache (key, tool, result, stored_ns, expires_ns, sum) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (key) DO UPDATE SET tool = EXCLUDED.tool, result = EXCLUDED.result, stored_ns = EXCLUDED.stored_ns,
			expires_ns = EXCLUDED.expires_ns, sum = EXCLUDED.sum`,
		r.Key, r.Tool, r.Result, r.StoredNs, r.ExpiresNs, r.Sum)
	if err != nil {
		return fmt.Errorf("tool cache: %w", err)
	}
	return nil
}
