package sqlite

import (
	"context"
	"database/sql"

	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Steps and segments are keyed by rk << 32 | seq (see the schema): a run's
// rows are contiguous in one rowid b-tree.
const maxSeq = codec.MaxSeq

func rowKey(rk int64, seq int) int64 { return rk<<32 | int64(seq) }

// lastStepID is SQL for the id of the last step of run r.
const lastStepID = `(SELECT max(id) FROM steps WHERE id BETWEEN r.rk << 32 AND (r.rk << 32) + 4294967295)`

const stepColumns = `s.seq, s.created_ns, s.msg_count, s.msg_sum, s.body, s.sum`

// scanStep scans stepColumns, after others, into r.
func scanStep(sc interface{ Scan(...any) error }, r *codec.Row, others ...any) error {
	var seq, count int64
	dest := append(others, &seq, &r.Created, &count, &r.MsgSum, &r.Body, &r.Sum)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	r.Seq, r.MsgCount = int(seq), int(count)
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const insertStepSQL = `INSERT INTO steps (id, rk, seq, created_ns, msg_count, msg_sum, body, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

// fencedInsertStepSQL is insertStepSQL conditional on the run's lease: it
// inserts the row only while ?9 is the run's lease token and ?10 its holder
// (one row changed), else nothing. The lease check and the insert are one
// statement of the checkpoint's transaction.
const fencedInsertStepSQL = `INSERT INTO steps (id, rk, seq, created_ns, msg_count, msg_sum, body, sum)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 FROM runs WHERE rk = ?2 AND lease_token = ?9 AND lease_owner = ?10`
