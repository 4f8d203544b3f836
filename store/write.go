package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// The write path. Every write transaction runs on the store's one write
// connection as BEGIN IMMEDIATE … COMMIT statements on a pinned *sql.Conn,
// not as a database/sql transaction, which starts a goroutine to watch its
// context (and under a cancellable context the driver runs each statement on
// a goroutine of its own). BEGIN, COMMIT and the step insert, the statements
// of every checkpoint, are prepared once per connection at the driver level
// and run without database/sql in between; the other statements go through
// the *sql.Conn and the driver's statement cache. See docs/performance.md.

// dbtx is what the statements of a write transaction run on.
type dbtx interface {
	execer
	querier
}

// wtx is a write transaction.
type wtx struct {
	*sql.Conn
	s *SQLite
}

// write runs fn in a write transaction and commits it; what names the
// operation in errors (none when empty, for a caller that names it
// itself). fn's statements run under ctx; BEGIN, COMMIT and ROLLBACK run to
// their end whatever ctx does, so a transaction is never left open on the
// connection.
func (s *SQLite) write(ctx context.Context, what string, fn func(*wtx) error) error {
	if err := s.inWrite(ctx, fn); err != nil {
		if what != "" {
			return fmt.Errorf("%s: %w", what, err)
		}
		return err
	}
	return nil
}

func (s *SQLite) inWrite(ctx context.Context, fn func(*wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx := &wtx{Conn: conn, s: s}
	if err := tx.hot(func(h *hotStmts) error { return h.exec(hotBegin) }); err != nil {
		tx.rollback()
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.rollback()
		return err
	}
	if err := tx.hot(func(h *hotStmts) error { return h.exec(hotCommit) }); err != nil {
		tx.rollback()
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollback ends the transaction if one is open. A connection that cannot
// leave its transaction is discarded (driver.ErrBadConn tells database/sql
// to close it), so the next write gets a clean one.
func (tx *wtx) rollback() {
	_ = tx.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return driver.ErrBadConn
		}
		if c.AutoCommit() {
			return nil
		}
		if _, err := c.Exec("ROLLBACK", nil); err != nil || !c.AutoCommit() {
			return driver.ErrBadConn
		}
		return nil
	})
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

// scratch returns the write connection's scratch buffer, empty; it may be
// used until the transaction ends.
func (tx *wtx) scratch() []byte { return tx.s.hot.scratch[:0] }

// keepScratch keeps b, grown from scratch, as the scratch buffer for the
// next transaction when it is larger, unless it grew too large to keep
// around.
func (tx *wtx) keepScratch(b []byte) {
	if cap(b) > cap(tx.s.hot.scratch) && cap(b) <= 1<<20 {
		tx.s.hot.scratch = b[:0]
	}
}

// insertStep inserts a step row (see insertStepSQL), setting its checksum.
func (tx *wtx) insertStep(r *stepRow, rk int64) error {
	return tx.hot(func(h *hotStmts) error {
		r.sum = stepSum(rk, r)
		h.args = append(h.args[:0],
			driver.NamedValue{Ordinal: 1, Value: rowKey(rk, r.seq)},
			driver.NamedValue{Ordinal: 2, Value: rk},
			driver.NamedValue{Ordinal: 3, Value: int64(r.seq)},
			driver.NamedValue{Ordinal: 4, Value: r.created},
			driver.NamedValue{Ordinal: 5, Value: int64(r.msgCount)},
			driver.NamedValue{Ordinal: 6, Value: r.msgSum},
			driver.NamedValue{Ordinal: 7, Value: r.action},
			driver.NamedValue{Ordinal: 8, Value: r.result},
			driver.NamedValue{Ordinal: 9, Value: r.head},
			driver.NamedValue{Ordinal: 10, Value: r.msgs},
			driver.NamedValue{Ordinal: 11, Value: r.sum},
		)
		defer clear(h.args) // the blobs are the caller's
		return h.exec(hotInsertStep, h.args...)
	})
}

// The statements every checkpoint runs.
const (
	hotBegin = iota
	hotCommit
	hotInsertStep
	nHot
)

var hotSQL = [nHot]string{`BEGIN IMMEDIATE`, `COMMIT`, insertStepSQL}

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
	st := h.stmts[i]
	if st == nil {
		ds, err := h.conn.Prepare(hotSQL[i])
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		var ok bool
		if st, ok = ds.(*sqlite3.SQLiteStmt); !ok {
			_ = ds.Close()
			return fmt.Errorf("prepare: unexpected driver statement %T", ds)
		}
		h.stmts[i] = st
	}
	_, err := st.ExecContext(context.Background(), args)
	return err
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
	// scratch is a buffer for the transaction holding the write
	// connection (see wtx.scratch).
	scratch []byte
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
