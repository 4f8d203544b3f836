package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Options tune a store. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Now is the store's clock, used for created/updated times and a
	// stalled run's retry time. The default is the database server's
	// clock: time.Now plus the offset to the server's clock measured at
	// Open. Lease expiries do not use it: they are written and judged by
	// the server's clock in the statements that take, renew and claim a
	// lease (serverNowNs), so a host whose clock drifted since Open, or
	// a Now set hours off, cannot take a live run over or pin a dead
	// one.
	Now func() time.Time
	// Schema, when set, is the schema the store lives in: Open creates it
	// if it does not exist, and every connection uses it (search_path).
	// Empty: the connection's default search_path (usually public).
	Schema string
	// Durability is store.DurabilityFull (default: synchronous_commit as
	// the server sets it, on unless an administrator changed it) or
	// store.DurabilityNormal (synchronous_commit=off for the store's
	// connections: a commit returns before its WAL reaches disk).
	Durability store.Durability
	// MaxConns caps the connection pool (default: pgxpool's, the larger of
	// 4 and the number of CPUs).
	MaxConns int32
	// LogCacheBytes bounds the memory that holds the decoded message logs
	// of the runs this store loaded (store/internal/codec's LogCache), so
	// that loading a run again decodes only what was appended since; a
	// run counts its messages' bytes plus 128 bytes a message, and the
	// least recently loaded runs are evicted first. 0: 32 MiB; negative:
	// no cache, every load decodes the whole log.
	LogCacheBytes int64

	// tracer, when set, traces every statement (the tests count round
	// trips with it).
	tracer pgx.QueryTracer
}

// Postgres is the PostgreSQL store. It is safe for concurrent use by many
// goroutines, and many processes on many hosts may share one database: a
// run's writes are fenced by its lease, reads see committed data.
type Postgres struct {
	pool   *pgxpool.Pool
	now    func() time.Time
	schema string
	// What this store remembers of the runs it writes (tails and open
	// segments) and of the tool lists it holds.
	cache codec.RunCache
	tools codec.ToolLists
	// blobs: the bodies stored once (configs, first messages; blobs.go).
	blobs codec.Blobs
	// logs holds decoded message logs, for loads.
	logs *codec.LogCache
	// steps batches the common checkpoints (batch.go).
	steps stepBatcher
	// rks are run keys taken for creates (run.go).
	rks rkPool
}

var _ store.Store = (*Postgres)(nil)

// Open connects to the database at url (a PostgreSQL URL or keyword/value
// string, as pgx parses it) and brings the store's schema up to date. A
// database written by a newer stepwise is refused with store.ErrNewerSchema.
func Open(ctx context.Context, url string, opts *Options) (*Postgres, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if o.tracer != nil {
		cfg.ConnConfig.Tracer = o.tracer
	}
	if o.Durability == store.DurabilityNormal {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	where := cfg.ConnConfig.Host + "/" + cfg.ConnConfig.Database
	if o.Schema != "" {
		if err := createSchema(ctx, cfg.ConnConfig, o.Schema); err != nil {
			return nil, fmt.Errorf("open store %s: schema %s: %w", where, o.Schema, err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.Schema}.Sanitize()
		where += " schema " + o.Schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	s := &Postgres{pool: pool, now: o.Now, schema: o.Schema, logs: codec.NewLogCache(o.LogCacheBytes)}
	if s.now == nil {
		offset, err := serverOffset(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("open store %s: read the server's clock: %w", where, err)
		}
		s.now = func() time.Time { return time.Now().Add(offset) }
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	return s, nil
}

// createSchema creates the schema if it does not exist, on a connection of
// its own (the pool's connections use it from their first moment).
func createSchema(ctx context.Context, cc *pgx.ConnConfig, schema string) error {
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize())
	// Two openers racing to create it: one of them sees the other's row.
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && (pe.Code == codeUniqueViolation || pe.Code == codeDuplicateSchema) {
		return nil
	}
	return err
}

// serverOffset measures how far the server's clock is ahead of this
// host's: the best of a few readings, each taken as if at the middle of its
// round trip.
func serverOffset(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	var offset time.Duration
	best := time.Duration(-1)
	for range 3 {
		var server time.Time
		t0 := time.Now()
		if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
			return 0, err
		}
		rtt := time.Since(t0)
		if best < 0 || rtt < best {
			best, offset = rtt, server.Sub(t0.Add(rtt/2))
		}
	}
	return offset, nil
}

// Schema is the schema the store lives in (Options.Schema), or "" for the
// connections' default.
func (s *Postgres) Schema() string { return s.schema }

// Pool is the store's connection pool, for a program that runs its own
// statements on the store's connections (the bench times its floor on
// them). Statements on the store's tables bypass its checks and fencing.
func (s *Postgres) Pool() *pgxpool.Pool { return s.pool }

// Close closes the store's connections. Records already returned stay
// valid.
func (s *Postgres) Close() error {
	s.pool.Close()
	return nil
}
