package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// The write path. Every write transaction runs on the store's one write
// connection as BEGIN IMMEDIATE … COMMIT statements on a pinned *sql.Conn,
// not as a database/sql transaction, which starts a goroutine to watch its
// context (and under a cancellable context the driver runs each statement on
// a goroutine of its own). BEGIN, COMMIT and the step insert, the statements
// of every checkpoint, are prepared once per connection at the driver level
// and run without database/sql in between; the other statements go through
// the *sql.Conn and the driver's statement cache. The common checkpoint
// (writeHot) runs whole in one visit to the driver connection. See
// docs/adr/0008-write-path.md and docs/performance.md.

// dbtx is what the statements of a write transaction run on.
type dbtx interface {
	execer
	querier
}

// wtx is a write transaction.
type wtx struct {
	*sql.Conn
	s *SQLite
	// committed runs after the transaction commits.
	committed []func()
}

// A write's statements run without their context's cancellation, as the
// batch's BEGIN and COMMIT do: a write transaction holds other callers'
// writes too (batch.go), and SQLite rolls the whole transaction back when
// a statement in it is interrupted. A caller gone before its turn writes
// nothing (batch.go checks its context first); once begun, its write runs
// to its end. It is also the driver's fast path: with a context that can
// be cancelled, the driver runs each statement on a goroutine of its own,
// which the writer then waits to be scheduled, inside the one write lock.

// ExecContext is the connection's ExecContext, without ctx's cancellation.
func (tx *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.Conn.ExecContext(uncancelled(ctx), query, args...)
}

// QueryContext is the connection's QueryContext, without ctx's cancellation.
func (tx *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return tx.Conn.QueryContext(uncancelled(ctx), query, args...)
}

// QueryRowContext is the connection's QueryRowContext, without ctx's
// cancellation.
func (tx *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return tx.Conn.QueryRowContext(uncancelled(ctx), query, args...)
}

// uncancelled is ctx without its cancellation (ctx itself when it has none).
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// onCommit runs fn once the transaction commits (never when it rolls back).
func (tx *wtx) onCommit(fn func()) { tx.committed = append(tx.committed, fn) }

// write runs fn in a write transaction and commits it; what names the
// operation in errors (none when empty, for a caller that names it
// itself). A caller whose ctx ended before its turn writes nothing; once
// begun, fn's statements, like BEGIN, COMMIT and ROLLBACK, run to their
// end whatever ctx does (see ExecContext), so a transaction is never left
// open on the connection nor another caller's write in it rolled back.
func (s *SQLite) write(ctx context.Context, what string, fn func(*wtx) error) error {
	return s.writeAs(ctx, what, false, fn)
}

// writeLight is write for a write that need not survive a power loss on
// its own under SyncCritical: a lease (after a power loss every holder on
// this machine is dead), a cache entry, a step that changes no status.
func (s *SQLite) writeLight(ctx context.Context, what string, fn func(*wtx) error) error {
	return s.writeAs(ctx, what, true, fn)
}

func (s *SQLite) writeAs(ctx context.Context, what string, light bool, fn func(*wtx) error) error {
	if err := s.inWrite(ctx, light, fn); err != nil {
		if what != "" {
			return fmt.Errorf("%s: %w", what, err)
		}
		return err
	}
	return nil
}

func (s *SQLite) inWrite(ctx context.Context, light bool, fn func(*wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := getWriteReq()
	r.ctx, r.fn, r.light = ctx, fn, light
	s.commit(r) // batch.go
	err, committed := r.err, r.committed
	putWriteReq(r)
	if err != nil {
		return err
	}
	for _, fn := range committed {
		fn()
	}
	return nil
}

// rollback ends the transaction if one is open. A connection that cannot
// leave its transaction is discarded (driver.ErrBadConn tells database/sql
// to close it), so the next write gets a clean one.
func (tx *wtx) rollback() {
	_ = tx.Raw(func(dc any) error {
		if c, ok := dc.(*sqlite3.SQLiteConn); ok && rollbackConn(c) {
			return nil
		}
		return driver.ErrBadConn
	})
}

// rollbackConn ends c's transaction if one is open, and reports whether c
// is out of it.
func rollbackConn(c *sqlite3.SQLiteConn) bool {
	if c.AutoCommit() {
		return true
	}
	_, err := c.Exec("ROLLBACK", nil)
	return err == nil && c.AutoCommit()
}

// badConn is err returned from inside Raw so that database/sql discards
// the connection, as it does after an error that is driver.ErrBadConn.
type badConn struct{ err error }

func (e badConn) Error() string        { return e.err.Error() }
func (e badConn) Unwrap() error        { return e.err }
func (e badConn) Is(target error) bool { return target == driver.ErrBadConn }

// rollback ends the connection's transaction after err. When the
// connection cannot leave it, the error says to discard the connection.
func (h *hotStmts) rollback(err error) error {
	if rollbackConn(h.conn) {
		return err
	}
	return badConn{err}
}

// hot runs fn with the connection's driver-level statements.
func (tx *wtx) hot(fn func(*hotStmts) error) error {
	return tx.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		return fn(tx.s.hotFor(c))
	})
}

// scratch returns the write connection's scratch buffers (for a row's
// parts and for its compressed body), empty. Only the holder of the write
// connection may use them, until its transaction ends.
func (s *SQLite) scratch() ([]byte, []byte) { return s.hot.scratch[:0], s.hot.spare[:0] }

// keepScratch keeps b and spare, grown from the scratch buffers, for the
// next transaction when they are larger, unless they grew too large to
// keep around.
func (s *SQLite) keepScratch(b, spare []byte) {
	if cap(b) > cap(s.hot.scratch) && cap(b) <= 1<<20 {
		s.hot.scratch = b[:0]
	}
	if cap(spare) > cap(s.hot.spare) && cap(spare) <= 1<<20 {
		s.hot.spare = spare[:0]
	}
}

// insertStep inserts a step row (see insertStepSQL), setting its checksum.
func (tx *wtx) insertStep(r *codec.Row, rk int64) error {
	return tx.hot(func(h *hotStmts) error { return h.insertStep(r, rk) })
}

// insertFenced inserts a step row while l is the run's lease (see
// fencedInsertStepSQL), setting its checksum; otherwise it writes nothing
// and returns ErrLeaseLost.
func (tx *wtx) insertFenced(ctx context.Context, r *codec.Row, rk int64, l store.Lease) error {
	var fenced bool
	err := tx.hot(func(h *hotStmts) (err error) {
		fenced, err = h.insertFenced(r, rk, l)
		return err
	})
	if err == nil && !fenced {
		return lostOrMissing(ctx, tx, l)
	}
	return err
}

// insertStep inserts a step row, setting its checksum.
func (h *hotStmts) insertStep(r *codec.Row, rk int64) error {
	h.stepArgs(r, rk)
	defer clear(h.args) // the blobs are the caller's
	return h.query(hotInsertStep, h.args...)
}

// insertFenced inserts a step row while l is the run's lease (its token and
// holder), setting its checksum; fenced is false when the lease is not the
// run's (nothing was written). It runs as an exec and reads the count of changed
// rows: a RETURNING clause, which would let it run as a query, makes
// SQLite buffer the returned row in a temporary table, which cost a
// checkpoint several microseconds (BenchmarkAppendStep).
func (h *hotStmts) insertFenced(r *codec.Row, rk int64, l store.Lease) (fenced bool, err error) {
	if l.Owner == "" {
		return false, nil
	}
	h.stepArgs(r, rk)
	h.args = append(h.args, driver.NamedValue{Ordinal: 9, Value: l.Token}, driver.NamedValue{Ordinal: 10, Value: l.Owner})
	defer clear(h.args) // the blobs are the caller's
	st, err := h.stmt(hotInsertFenced)
	if err != nil {
		return false, err
	}
	res, err := st.ExecContext(context.Background(), h.args)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// stepArgs sets h.args to the arguments of a step insert, setting the
// row's checksum.
func (h *hotStmts) stepArgs(r *codec.Row, rk int64) {
	r.Sum = codec.StepSum(rk, r)
	h.args = append(h.args[:0],
		driver.NamedValue{Ordinal: 1, Value: rowKey(rk, r.Seq)},
		driver.NamedValue{Ordinal: 2, Value: rk},
		driver.NamedValue{Ordinal: 3, Value: int64(r.Seq)},
		driver.NamedValue{Ordinal: 4, Value: r.Created},
		driver.NamedValue{Ordinal: 5, Value: int64(r.MsgCount)},
		driver.NamedValue{Ordinal: 6, Value: r.MsgSum},
		driver.NamedValue{Ordinal: 7, Value: r.Body},
		driver.NamedValue{Ordinal: 8, Value: r.Sum},
	)
}

// The statements every checkpoint runs.
const (
	hotBegin = iota
	hotCommit
	hotInsertStep
	hotInsertFenced
	hotSavepoint
	hotRelease
	hotRollbackTo
	nHot
)

var hotSQL = [nHot]string{`BEGIN IMMEDIATE`, `COMMIT`, insertStepSQL, fencedInsertStepSQL, `SAVEPOINT w`, `RELEASE w`, `ROLLBACK TO w`}

// hotStmts are the hot statements prepared at the driver level on one
// connection, each when first run. They are used only inside
// (*sql.Conn).Raw on the write connection, which database/sql hands to one
// user at a time.
type hotStmts struct {
	conn  *sqlite3.SQLiteConn
	stmts [nHot]*sqlite3.SQLiteStmt
	args  []driver.NamedValue
}

// exec runs hot statement i with args. The context is context.Background so
// that the driver runs the statement on the calling goroutine; a statement
// waits for the write lock at most the busy timeout.
func (h *hotStmts) exec(i int, args ...driver.NamedValue) error {
	st, err := h.stmt(i)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(context.Background(), args)
	return err
}

// query runs hot statement i with args as a query, which makes the driver
// bind the arguments and step the statement in one call into C, not one
// call per argument: faster for a statement with many arguments.
func (h *hotStmts) query(i int, args ...driver.NamedValue) error {
	st, err := h.stmt(i)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(context.Background(), args)
	if err != nil {
		return err
	}
	return rows.Close()
}

// stmt returns hot statement i, prepared when first used.
func (h *hotStmts) stmt(i int) (*sqlite3.SQLiteStmt, error) {
	if st := h.stmts[i]; st != nil {
		return st, nil
	}
	ds, err := h.conn.Prepare(hotSQL[i])
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	st, ok := ds.(*sqlite3.SQLiteStmt)
	if !ok {
		_ = ds.Close()
		return nil, fmt.Errorf("prepare: unexpected driver statement %T", ds)
	}
	h.stmts[i] = st
	return st, nil
}

func (h *hotStmts) close() error {
	var errs []error
	for i, st := range h.stmts {
		if st != nil {
			errs = append(errs, st.Close())
			h.stmts[i] = nil
		}
	}
	return errors.Join(errs...)
}

// hotCache holds the hot statements of the write connection.
type hotCache struct {
	mu sync.Mutex
	h  *hotStmts
	// scratch and spare are buffers for the transaction holding the
	// write connection (see SQLite.scratch).
	scratch, spare []byte
}

// hotFor returns the hot statements of c, starting afresh when c is new
// (the first write, or database/sql replaced a broken connection).
func (s *SQLite) hotFor(c *sqlite3.SQLiteConn) *hotStmts {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if h := s.hot.h; h != nil && h.conn == c {
		return h
	}
	if s.hot.h != nil {
		_ = s.hot.h.close()
	}
	s.hot.h = &hotStmts{conn: c}
	return s.hot.h
}

// closeHot finalizes the hot statements (on Close).
func (s *SQLite) closeHot() error {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if s.hot.h == nil {
		return nil
	}
	err := s.hot.h.close()
	s.hot.h = nil
	return err
}
