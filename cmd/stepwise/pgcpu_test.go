package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// pgMeter measures the CPU that a local PostgreSQL server spends on the
// clients that connect with one application_name: their backends, and
// the server's own processes that every client shares (the postmaster
// itself, the WAL writer, checkpointer, background writer, launchers and
// any autovacuum worker). A backend that exits between two readings is
// lost (the serve processes keep their pools' connections open: pgxpool
// closes one idle for 30 minutes). Other clients' backends are not
// counted; postgresCPU counts them, and exited ones, for a cross-check.
type pgMeter struct {
	conn *pgx.Conn // its own backend, not counted
	app  string
}

// pgReading is the CPU seconds of each process a pgMeter counts.
type pgReading map[int]float64

// read reads the CPU of the processes counted now; ok is false when one
// of them is not a postgres process of this host (a server elsewhere).
func (m pgMeter) read(ctx context.Context) (r pgReading, ok bool, err error) {
	rows, err := m.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 OR backend_type <> 'client backend'`, m.app)
	if err != nil {
		return nil, false, fmt.Errorf("pg_stat_activity: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, false, fmt.Errorf("pg_stat_activity: %w", err)
	}
	r = pgReading{}
	postmaster := 0
	for _, pid := range pids {
		st, err := readProcStat(int(pid))
		if err != nil || st.comm != "postgres" {
			return nil, false, nil
		}
		r[int(pid)] = st.own
		postmaster = st.ppid
	}
	if st, err := readProcStat(postmaster); err == nil && st.comm == "postgres" {
		r[postmaster] = st.own
	}
	return r, true, nil
}

// since is the CPU seconds used between an earlier reading and r by the
// processes r counts (one that started since counts whole), and how many
// processes of the earlier reading are gone (their CPU in between is
// lost).
func (r pgReading) since(before pgReading) (seconds float64, gone int) {
	for pid, cpu := range r {
		seconds += cpu - before[pid]
	}
	for pid := range before {
		if _, ok := r[pid]; !ok {
			gone++
		}
	}
	return seconds, gone
}
