package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store/postgres"
)

// The workload on PostgreSQL (Options.DB). Each row runs in a schema of its
// own, dropped after, on a store limited to one connection; its floor is
// a bare INSERT of the same bytes in autocommit (one round trip: the
// insert and its commit) on that same connection, timed at every model
// call as on SQLite (ADR 0009). Bytes per step is the growth of the
// store's tables and indexes, compacted (VACUUM FULL: a segment replaces
// the step rows it holds, whose dead tuples PostgreSQL reclaims later);
// I/O bytes per step is the write-ahead log the run generated.

// pgMode labels PostgreSQL's rows (Row.Sync) and floor (Report.Floor).
const pgMode = "postgres"

// floorTable is the floor's table, in the row's schema; the store's size
// leaves it out.
const floorTable = "bench_floor"

// runOncePG runs the workload for n turns on the PostgreSQL server at url
// (checkpointing unless checkpoint is false) and measures it, with its
// floor measured alongside from inserts of floorBytes (none when 0).
func runOncePG(url string, n int, checkpoint bool, floorBytes, tools int) (Row, core.State, error) {
	ctx := context.Background()
	row := Row{N: n, Checkpoint: checkpoint, Tools: max(tools, 1)}
	m := &model{n: n, calls: make([]span, 0, n+2)}
	ag := agentWith(n, m, tools)
	if !checkpoint {
		_, err := measure(ctx, nullStore{}, m, ag, n, &row)
		return row, core.State{}, err
	}
	row.Sync = pgMode
	db, cleanup, err := postgres.OpenTestSchemaOptions(ctx, url, fmt.Sprintf("bench_%d", n), &postgres.Options{MaxConns: 1})
	if err != nil {
		return row, core.State{}, err
	}
	defer cleanup()
	pool := db.Pool()
	var p *pgProbe
	if floorBytes > 0 {
		if p, err = openPGProbe(ctx, pool, floorTable, floorBytes); err != nil {
			return row, core.State{}, err
		}
		p.samples = make([]float64, 0, n+2)
		m.probe = p
		row.FloorBytes = floorBytes
	}
	empty, err := storeBytes(ctx, pool)
	if err != nil {
		return row, core.State{}, err
	}
	wal0, err := walBytes(ctx, pool)
	if err != nil {
		return row, core.State{}, err
	}
	out, err := measure(ctx, db, m, ag, n, &row)
	if err != nil {
		return row, core.State{}, err
	}
	wal, err := walBytes(ctx, pool)
	if err != nil {
		return row, core.State{}, err
	}
	wal -= wal0
	if p != nil {
		wal -= p.wal
	}
	row.IOBytesPerStep = float64(wal) / float64(out.Steps)
	full, err := storeBytes(ctx, pool)
	if err != nil {
		return row, core.State{}, err
	}
	row.BytesPerStep = float64(full-empty) / float64(out.Steps)
	st, err := loadAndReplay(ctx, db, out.RunID, ag, &row)
	return row, st, err
}

// pgProbe times bare inserts of a fixed payload, each in autocommit, on
// the pool's one connection (see floorProbe).
type pgProbe struct {
	pool    *pgxpool.Pool
	insert  string
	payload []byte
	samples []float64
	// wal is the write-ahead log the samples wrote, for the run's figures
	// to leave out.
	wal int64
}

func openPGProbe(ctx context.Context, pool *pgxpool.Pool, table string, bytes int) (*pgProbe, error) {
	t := pgx.Identifier{table}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+t+` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, data bytea NOT NULL)`); err != nil {
		return nil, fmt.Errorf("floor table: %w", err)
	}
	return &pgProbe{pool: pool, insert: `INSERT INTO ` + t + ` (data) VALUES ($1)`, payload: floorPayload(bytes)}, nil
}

func (p *pgProbe) sample(txs int) error {
	ctx := context.Background()
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var before int64
	if err := conn.QueryRow(ctx, walSQL).Scan(&before); err != nil {
		return err
	}
	t0 := time.Now()
	for range txs {
		if _, err := conn.Exec(ctx, p.insert, p.payload); err != nil {
			return err
		}
	}
	p.samples = append(p.samples, float64(time.Since(t0).Nanoseconds())/1e3)
	var after int64
	if err := conn.QueryRow(ctx, walSQL).Scan(&after); err != nil {
		return err
	}
	p.wal += after - before
	return nil
}

func (p *pgProbe) median() float64 { return percentile(p.samples, 0.5) }

// walSQL reads the server's write-ahead log position in bytes.
const walSQL = `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint`

func walBytes(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, walSQL).Scan(&n)
	return n, err
}

// storeBytes compacts the store's tables in the pool's schema and returns
// their size with indexes and TOAST, the floor's table left out.
func storeBytes(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	rows, err := pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> $1 ORDER BY 1`, floorTable)
	if err != nil {
		return 0, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tables {
		id := pgx.Identifier{t}.Sanitize()
		if _, err := pool.Exec(ctx, `VACUUM FULL `+id); err != nil {
			return 0, err
		}
		var n int64
		if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, id).Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// pgFloor measures the floor on its own: count bare inserts of bytes in a
// loop, on a fresh schema's one connection, in autocommit
// (InsertMedianUS), and with explicit too as explicit transactions
// (InsertSQLMedianUS: BEGIN, INSERT, COMMIT, three round trips).
func pgFloor(url string, bytes, count int, explicit bool) (Floor, error) {
	ctx := context.Background()
	f := Floor{Sync: pgMode, Bytes: bytes}
	db, cleanup, err := postgres.OpenTestSchemaOptions(ctx, url, "bench_floor", &postgres.Options{MaxConns: 1})
	if err != nil {
		return f, err
	}
	defer cleanup()
	p, err := openPGProbe(ctx, db.Pool(), floorTable, bytes)
	if err != nil {
		return f, err
	}
	for range count {
		if err := p.sample(1); err != nil {
			return f, err
		}
	}
	f.InsertMedianUS = p.median()
	if !explicit {
		return f, nil
	}
	samples := make([]float64, 0, count)
	for range count {
		t0 := time.Now()
		err := pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, p.insert, p.payload)
			return err
		})
		if err != nil {
			return f, err
		}
		samples = append(samples, float64(time.Since(t0).Nanoseconds())/1e3)
	}
	f.InsertSQLMedianUS = percentile(samples, 0.5)
	return f, nil
}

// rowFloorPG measures a row's tight floor on PostgreSQL (see
// Row.TightFloorTurnUS).
func rowFloorPG(url string, row *Row) error {
	f, err := pgFloor(url, int(row.BytesPerStep), 2000, false)
	if err != nil {
		return err
	}
	row.TightFloorTurnUS = 2 * f.InsertMedianUS // the encodings are added once measured
	return nil
}

var _ floorProbe = (*pgProbe)(nil)
