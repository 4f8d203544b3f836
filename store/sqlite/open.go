package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// Sync is SQLite's synchronous setting for the store.
type Sync string

// Sync settings. With FULL a committed step survives a power loss, at the
// price of an fsync of the WAL per commit; with NORMAL it survives a crash
// of the process only; with CRITICAL (the default) the commits that must
// survive a power loss are FULL and a running run's common checkpoints
// NORMAL (store.DurabilityCritical).
const (
	SyncNormal   Sync = "NORMAL"
	SyncFull     Sync = "FULL"
	SyncCritical Sync = "CRITICAL"
)

// Options tune a store. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Sync is SyncCritical (default), SyncFull or SyncNormal.
	Sync Sync
	// BusyTimeout is how long a write waits for another process holding
	// the write lock before it fails (default 5s).
	BusyTimeout time.Duration
	// Now is the store's clock, used for created/updated times and lease
	// expiries (default time.Now). Times are stored in nanoseconds, UTC.
	// Whether a lease lapsed is judged by the time between this store's
	// own readings of Now (it watches the lease's heartbeat), never by
	// comparing Now with a time another process wrote: readings of
	// time.Now, even shifted by a constant, subtract on the monotonic
	// clock, so a skewed or jumping wall clock cannot fool it.
	Now func() time.Time
	// MustExist refuses to create the database: a file that does not
	// exist is store.ErrNotFound (for commands that only read).
	MustExist bool
	// LogCacheBytes bounds the memory that holds the decoded message logs
	// of the runs this store loaded (store/internal/codec's LogCache), so
	// that loading a run again decodes only what was appended since; a
	// run counts its messages' bytes plus 128 bytes a message, and the
	// least recently loaded runs are evicted first. 0: 32 MiB; negative:
	// no cache, every load decodes the whole log.
	LogCacheBytes int64
}

// SQLite is the SQLite store. It is safe for concurrent use by many
// goroutines, and several processes may open the same file: writes
// serialize on SQLite's write lock (waiting up to BusyTimeout), reads never
// block writes (WAL).
type SQLite struct {
	path string
	now  func() time.Time
	// critical: the connections are NORMAL and a batch with a write other
	// than a running run's common checkpoint commits FULL (SyncCritical).
	critical bool
	// w is the write pool: one connection, transactions BEGIN IMMEDIATE
	// (write.go), so writers in this process queue in Go and take the lock
	// up front.
	w *sql.DB
	// r is the read pool: deferred transactions, snapshot reads.
	r *sql.DB
	// The write connection's hot statements (see write.go).
	hot hotCache
	// batch queues common checkpoints for group commit (batch.go).
	batch batcher
	// What this store remembers of the runs it writes (tails and open
	// segments) and of the tool lists it holds.
	cache codec.RunCache
	tools codec.ToolLists
	// blobs: the bodies stored once (configs, first messages; blobs.go).
	blobs codec.Blobs
	// logs holds decoded message logs, for loads.
	logs *codec.LogCache
	// watch judges leases lapsed on this store's clock (lease_watch.go).
	watch leaseWatch
}

var _ store.Store = (*SQLite)(nil)

// SyncFor is the Sync setting of a durability.
func SyncFor(d store.Durability) Sync {
	switch d {
	case store.DurabilityNormal:
		return SyncNormal
	case store.DurabilityFull:
		return SyncFull
	}
	return SyncCritical
}

// Open opens (creating if needed) the store in the SQLite file at path and
// brings its schema up to date. A database written by a newer stepwise is
// refused with ErrNewerSchema.
func Open(path string, opts *Options) (*SQLite, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch o.Sync = Sync(strings.ToUpper(string(o.Sync))); o.Sync {
	case "":
		o.Sync = SyncCritical
	case SyncNormal, SyncFull, SyncCritical:
	default:
		return nil, fmt.Errorf("open store: sync %q: want %q, %q or %q", o.Sync, SyncCritical, SyncNormal, SyncFull)
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open store: %q: want the path of a database file", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil {
		if o.MustExist {
			return nil, fmt.Errorf("open store: %w: no database at %s", store.ErrNotFound, abs)
		}
		if dir, derr := os.Stat(filepath.Dir(abs)); derr != nil || !dir.IsDir() {
			return nil, fmt.Errorf("open store: %w: the directory %s does not exist", store.ErrNotFound, filepath.Dir(abs))
		}
	} else if fi.IsDir() {
		return nil, fmt.Errorf("open store: %s is a directory, not a database file", abs)
	}
	s := &SQLite{path: abs, now: o.Now, critical: o.Sync == SyncCritical, logs: codec.NewLogCache(o.LogCacheBytes)}
	connSync := o.Sync
	if s.critical {
		connSync = SyncNormal // raised to FULL around the commits that must survive a power loss (batch.go)
	}
	// The schema declares its foreign keys, but SQLite does not enforce
	// them: every key a write uses comes from a row read in the same
	// transaction or an earlier committed one, and runs and entities are
	// never deleted, so they hold by construction (TestForeignKeysHold
	// checks every write path), and enforcing them would cost a lookup in
	// runs per step (docs/adr/0008-write-path.md).
	params := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=0&_synchronous=%s", o.BusyTimeout.Milliseconds(), connSync)
	if s.w, err = sql.Open("sqlite3", dsn(abs, params+"&_txlock=immediate&_stmt_cache_size=16")); err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetConnMaxIdleTime(0)
	if s.r, err = sql.Open("sqlite3", dsn(abs, params+"&_txlock=deferred&_stmt_cache_size=16")); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	// Readers keep their connections: a server's burst of reads (a
	// thousand runs claimed at once) otherwise opens a connection per
	// reader and closes all but a few, and opening one (its pragmas) cost
	// a third of the server's CPU on 16 cores (docs/performance.md). The
	// pool stays unbounded (a reader that holds a connection while it
	// reads another must not wait for itself); idle ones go after a while.
	s.r.SetMaxIdleConns(min(64, max(8, 4*runtime.GOMAXPROCS(0))))
	s.r.SetConnMaxIdleTime(time.Minute)
	ctx := context.Background()
	if err := s.setup(ctx, o.BusyTimeout); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	return s, nil
}

func (s *SQLite) setup(ctx context.Context, busy time.Duration) error {
	if err := s.walMode(ctx, busy); err != nil {
		return err
	}
	return s.migrate(ctx)
}

// walMode switches the file to WAL (a persistent setting). Changing the
// journal mode needs the database to itself for a moment, and SQLite does not
// wait for that with the busy handler, so it is retried here.
func (s *SQLite) walMode(ctx context.Context, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for {
		var mode string
		err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal mode is %q, want wal", mode)
			}
			return nil
		}
		var se sqlite3.Error
		if !errors.As(err, &se) || (se.Code != sqlite3.ErrBusy && se.Code != sqlite3.ErrLocked) || time.Now().After(deadline) {
			return fmt.Errorf("set WAL mode: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dsn builds a go-sqlite3 URI for the file at abs. The characters URIs give
// meaning to are escaped so any path works.
func dsn(abs, params string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(abs)
	return "file:" + esc + "?" + params
}

// Path is the absolute path of the database file.
func (s *SQLite) Path() string { return s.path }

// Close closes the store. Steps already returned stay valid.
func (s *SQLite) Close() error {
	var errs []error
	errs = append(errs, s.closeHot())
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}
