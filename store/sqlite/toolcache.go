package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

var _ store.ToolCache = (*SQLite)(nil)

// CachedResult returns the tool cache's entry under key unless it has
// expired by the store's clock (store.ErrNotFound then, and when there is
// none); a corrupt entry is store.ErrCorrupt.
func (s *SQLite) CachedResult(ctx context.Context, key string) (store.CachedResult, error) {
	var r codec.CacheRow
	err := s.r.QueryRowContext(ctx, `SELECT key, tool, result, stored_ns, expires_ns, sum FROM tool_cache WHERE key = ? AND expires_ns > ?`,
		key, s.now().UnixNano()).Scan(&r.Key, &r.Tool, &r.Result, &r.StoredNs, &r.ExpiresNs, &r.Sum)
	if err != nil {
		return store.CachedResult{}, fmt.Errorf("tool cache: %w", notFound(err))
	}
	return r.Entry()
}

// CacheResult stores e under e.Key until ttl from now by the store's clock,
// replacing any entry with that key, and removes the entries that have
// expired, in one transaction.
func (s *SQLite) CacheResult(ctx context.Context, e store.CachedResult, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("tool cache: ttl %s is not positive", ttl)
	}
	return s.writeLight(ctx, "tool cache", func(tx *wtx) error {
		now := s.now().UnixNano()
		r, err := codec.NewCacheRow(e, now, now+int64(ttl))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_cache WHERE expires_ns <= ?`, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO tool_cache (key, tool, result, stored_ns, expires_ns, sum) VALUES (?, ?, ?, ?, ?, ?)`,
			r.Key, r.Tool, r.Result, r.StoredNs, r.ExpiresNs, r.Sum)
		return err
	})
}
