package postgres

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// The SQL shared by the files of this package, and the scanning and error
// helpers that go with it.

// stepColumns are a step row's columns, as scanStep reads them.
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

// insertStepSQL inserts a step row (CreateRun, Import).
const insertStepSQL = `INSERT INTO steps (rk, seq, created_ns, msg_count, msg_sum, body, sum) VALUES ($1, $2, $3, $4, $5, $6, $7)`

// fencedInsertStepSQL is insertStepSQL conditional on the run's lease: it
// inserts the row only while $8 is the run's lease token and $9 its holder
// (one row inserted), else nothing. FOR SHARE locks the run's row for
// the rest of the statement's transaction, so that an Acquire (which takes
// the row FOR UPDATE) either waits for the step to commit, and then reads
// it back, or commits first, and then the re-checked condition fails: the
// lease check and the insert are one atomic step. See doc.go.
const fencedInsertStepSQL = `INSERT INTO steps (rk, seq, created_ns, msg_count, msg_sum, body, sum)
	SELECT $1, $2, $3, $4, $5, $6, $7 FROM runs WHERE rk = $1 AND lease_token = $8 AND lease_owner = $9 FOR SHARE`

// stepArgs are the arguments of insertStepSQL for r in run rk, setting r's
// checksum; fencedInsertStepSQL takes the lease's token and holder after
// them.
func stepArgs(r *codec.Row, rk int64, more ...any) []any {
	r.Sum = codec.StepSum(rk, r)
	return append([]any{rk, int64(r.Seq), r.Created, int64(r.MsgCount), r.MsgSum, nonNil(r.Body), r.Sum}, more...)
}

// SQLSTATE codes this store tells apart.
const (
	codeUniqueViolation = "23505"
	codeDuplicateSchema = "42P06"
)

// uniqueViolation reports whether err is a unique violation of the named
// constraint (any, when empty).
func uniqueViolation(err error, constraint string) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == codeUniqueViolation && (constraint == "" || pe.ConstraintName == constraint)
}

// nonNil is b, or an empty slice for nil: pgx sends a nil []byte as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func fromNs(ns int64) time.Time { return codec.FromNs(ns) }
