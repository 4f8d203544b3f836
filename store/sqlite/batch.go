package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Group commit. SQLite has one writer at a time, and a server drives many
// runs at once: when a burst of writes arrives (runs whose model calls end
// together), a transaction each makes every writer wait for the write
// connection to be handed to each of the others in turn, and a writer
// descheduled while it holds the connection stalls them all. Instead a
// write that finds another under way queues; the writer under way (the
// leader) then commits, in one transaction, everything queued meanwhile,
// and hands the lead to the first write queued after that batch.
//
// Each write in a batch still succeeds or fails alone: a general write
// (write) runs inside a savepoint, rolled back when it fails; a common
// checkpoint's row (one fenced insert) fails alone on a lost lease or a
// conflict (SQLite rolls back just the failing statement). An error of the
// transaction itself (BEGIN, COMMIT, a savepoint that cannot be rolled
// back) fails the whole batch, and nothing of it is written. Uncontended,
// a write leads a batch of one: the same statements as a transaction of
// its own, without savepoint and without hand-off.

// batcher queues writes for the leader.
type batcher struct {
	mu      sync.Mutex
	queue   []*writeReq
	free    []*writeReq // a spare queue, reused
	leading bool
	// largest is the largest batch committed so far, and batches how many
	// were (for tests).
	largest, batches int
}

// writeReq is one write waiting to be committed: a general write (fn), or
// a common checkpoint's row.
type writeReq struct {
	ctx context.Context // the caller's: a caller gone writes nothing
	fn  func(*wtx) error
	// light: fn's write need not survive a power loss on its own, even
	// with SyncCritical (a lease, a cache entry, a step that changes no
	// status); the common checkpoint (fn nil) is light too.
	light bool

	row    codec.Row
	rk     int64
	lease  store.Lease
	fenced bool // the row was written (false: the lease was not the run's)

	err       error
	committed []func() // fn's onCommit callbacks, for its caller to run
	// done receives false once the write's batch was committed (or
	// failed), true when this write's caller must lead the next batch.
	done chan bool
	// Buffers for a row (its parts and its compressed body), reused.
	buf, spare []byte
}

var writeReqs = sync.Pool{New: func() any { return &writeReq{done: make(chan bool, 1)} }}

func getWriteReq() *writeReq { return writeReqs.Get().(*writeReq) }

// putWriteReq recycles r, keeping its buffers unless they grew too large.
func putWriteReq(r *writeReq) {
	if cap(r.row.Buf) > cap(r.buf) && cap(r.row.Buf) <= 1<<20 {
		r.buf = r.row.Buf[:0]
	}
	if cap(r.spare) > 1<<20 {
		r.spare = nil
	}
	r.ctx, r.fn, r.light, r.row, r.rk, r.lease, r.fenced, r.err, r.committed = nil, nil, false, codec.Row{}, 0, store.Lease{}, false, nil, nil
	writeReqs.Put(r)
}

// commit writes r, alone or with others, and sets its outcome.
func (s *SQLite) commit(r *writeReq) {
	b := &s.batch
	b.mu.Lock()
	b.queue = append(b.queue, r)
	if b.leading {
		b.mu.Unlock()
		if lead := <-r.done; !lead {
			return
		}
		// The last leader handed the lead on: r is queued first.
	} else {
		b.leading = true
		b.mu.Unlock()
		// On one processor (GOMAXPROCS 1, as in a one-CPU container) the
		// goroutines ready to run go first, up to their own writes: the
		// writers the last commit released would otherwise run only once
		// this batch is written, and every batch would carry one write
		// (TestGroupCommitOnOneProcessor: 400 writes, 400 commits).
		// Queued now, they share this commit: twice the served steps per
		// second at half the CPU per step (docs/performance.md). With more
		// processors they run, and queue, while the leader writes; the
		// yield would only cost a lone writer a few microseconds.
		if runtime.GOMAXPROCS(0) == 1 {
			runtime.Gosched()
		}
	}
	b.mu.Lock()
	batch := b.queue
	b.queue, b.free = b.free, nil
	b.largest = max(b.largest, len(batch))
	b.batches++
	b.mu.Unlock()

	s.writeBatch(batch)

	var next *writeReq
	b.mu.Lock()
	if len(b.queue) > 0 {
		next = b.queue[0]
	} else {
		b.leading = false
	}
	b.mu.Unlock()
	for _, q := range batch {
		if q != r {
			q.done <- false
		}
	}
	clear(batch)
	b.mu.Lock()
	b.free = batch[:0]
	b.mu.Unlock()
	if next != nil {
		next.done <- true
	}
}

// writeBatch commits the batch's writes in one transaction on the write
// connection.
func (s *SQLite) writeBatch(batch []*writeReq) {
	fail := func(err error) {
		for _, q := range batch {
			if q.err == nil {
				q.err, q.fenced, q.committed = err, false, nil
			}
		}
	}
	// The batch runs to its end: its writers wait for it.
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		fail(err)
		return
	}
	defer conn.Close()
	if s.critical && slices.ContainsFunc(batch, func(q *writeReq) bool { return q.fn != nil && !q.light }) {
		// A write that carries a promise (a run's creation, an intent or
		// outcome, a pause, a stall, an end; not a lease, a cache entry or
		// a running run's step) must survive a power loss: this commit
		// syncs the WAL, which makes every commit before it durable too.
		if _, err := conn.ExecContext(context.Background(), "PRAGMA synchronous=FULL"); err != nil {
			fail(fmt.Errorf("synchronous=FULL: %w", err))
			return
		}
		defer func() {
			if _, err := conn.ExecContext(context.Background(), "PRAGMA synchronous=NORMAL"); err != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn }) // the next write gets a fresh connection
			}
		}()
	}
	tx := &wtx{Conn: conn, s: s}
	if err := tx.hot(func(h *hotStmts) error { return h.exec(hotBegin) }); err != nil {
		tx.rollback()
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	alone := len(batch) == 1
	for _, q := range batch {
		// A caller that gave up, maybe while the batch waited for the
		// lock, writes nothing.
		if q.err = q.ctx.Err(); q.err != nil {
			continue
		}
		if q.fn == nil {
			err := tx.hot(func(h *hotStmts) (err error) {
				q.fenced, err = h.insertFenced(&q.row, q.rk, q.lease)
				return err
			})
			if se, ok := errors.AsType[sqlite3.Error](err); ok && se.Code == sqlite3.ErrConstraint {
				q.err = insertStepErr(err) // this statement alone rolled back
				continue
			}
			if err != nil {
				tx.rollback()
				fail(fmt.Errorf("insert step: %w", err))
				return
			}
			continue
		}
		if !alone {
			if err := tx.hot(func(h *hotStmts) error { return h.exec(hotSavepoint) }); err != nil {
				tx.rollback()
				fail(fmt.Errorf("savepoint: %w", err))
				return
			}
		}
		tx.committed = nil
		if q.err = q.fn(tx); q.err != nil {
			if alone {
				break // the transaction is rolled back below
			}
			err := tx.hot(func(h *hotStmts) error {
				if err := h.exec(hotRollbackTo); err != nil {
					return err
				}
				return h.exec(hotRelease)
			})
			if err != nil {
				tx.rollback()
				fail(fmt.Errorf("roll back to a savepoint: %w", err))
				return
			}
			continue
		}
		q.committed = tx.committed
		if !alone {
			if err := tx.hot(func(h *hotStmts) error { return h.exec(hotRelease) }); err != nil {
				tx.rollback()
				fail(fmt.Errorf("release a savepoint: %w", err))
				return
			}
		}
	}
	if alone && batch[0].err != nil {
		tx.rollback()
		return
	}
	if err := tx.hot(func(h *hotStmts) error { return h.exec(hotCommit) }); err != nil {
		tx.rollback()
		fail(fmt.Errorf("commit: %w", err))
	}
}

// insertStepErr wraps the error of a step's insert. A step already stored
// at its seq (another store of the same holder wrote it, so this store's
// remembered tail was stale) is ErrSeq, as the package doc promises.
func insertStepErr(err error) error {
	if se, ok := errors.AsType[sqlite3.Error](err); ok &&
		(se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey || se.ExtendedCode == sqlite3.ErrConstraintUnique) {
		return fmt.Errorf("insert step: %w (%w)", store.ErrSeq, err)
	}
	return fmt.Errorf("insert step: %w", err)
}
