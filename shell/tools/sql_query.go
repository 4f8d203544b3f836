package tools

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// SQLite is how sql_query reaches SQLite. shell has no database driver of
// its own (it builds without cgo), so the program that runs agents
// registers one: cmd/stepwise registers store/sqlite's OpenQuery and
// QueryError. Until one is registered, sql_query answers that it is not
// available.
type SQLite struct {
	// Open opens the database at a file: URI (which says read-only) on
	// one connection that can reach no other file (no ATTACH).
	Open func(ctx context.Context, dsn string) (*sql.DB, *sql.Conn, error)
	// Error words an error of such a connection for the model (nil: the
	// error as it is).
	Error func(error) error
}

var sqliteDriver atomic.Pointer[SQLite]

// RegisterSQLite makes d the way sql_query reaches SQLite.
func RegisterSQLite(d SQLite) { sqliteDriver.Store(&d) }

// openReadOnly opens the database at dsn through the registered SQLite.
func openReadOnly(ctx context.Context, dsn string) (*sql.DB, *sql.Conn, error) {
	d := sqliteDriver.Load()
	if d == nil || d.Open == nil {
		return nil, nil, errors.New("sql_query is not available: this program registered no SQLite driver (tools.RegisterSQLite)")
	}
	return d.Open(ctx, dsn)
}

// sqlError words a database error for the model.
func sqlError(err error) error {
	if d := sqliteDriver.Load(); d != nil && d.Error != nil {
		return d.Error(err)
	}
	return fmt.Errorf("SQLite: %v", err)
}

// Defaults of SQLQueryOptions.
const (
	DefaultSQLMaxRows = 200
	DefaultSQLTimeout = 10 * time.Second
	maxBlobHex        = 64 // bytes of a binary value shown, in hex
)

// SQLQueryOptions configures sql_query. Zero values mean the defaults,
// except Path, which is required.
type SQLQueryOptions struct {
	// Path is the SQLite database file. It is opened read-only for each
	// call (mode=ro and query_only), and ATTACH is disabled, so a query can
	// neither change it nor open another file.
	Path string
	// MaxRows is how many rows a result shows (0: DefaultSQLMaxRows).
	MaxRows int
	// Timeout bounds one query (0: DefaultSQLTimeout); the caller's context
	// bounds it too.
	Timeout time.Duration
}

func (o SQLQueryOptions) withDefaults() SQLQueryOptions {
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultSQLMaxRows
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultSQLTimeout
	}
	return o
}

func (o SQLQueryOptions) validate() error {
	if o.Path == "" {
		return errors.New("sql_query: path is required")
	}
	if o.MaxRows < 0 || o.Timeout < 0 {
		return errors.New("sql_query: limits must not be negative")
	}
	return nil
}

type sqlQuery struct {
	opts SQLQueryOptions
	err  error // a configuration problem, reported by every call
}

// SQLQuery returns the sql_query tool: it runs a query against a SQLite
// database opened read-only and returns the rows as JSON, columns in the
// order of the query. Writes fail with an error the model sees.
// Idempotent. It needs a registered SQLite (RegisterSQLite).
func SQLQuery(opts SQLQueryOptions) shell.Tool {
	return &sqlQuery{opts: opts.withDefaults(), err: opts.validate()}
}

func (t *sqlQuery) Spec() core.Tool {
	return core.Tool{
		Name: "sql_query",
		Description: fmt.Sprintf("Run a read-only SQL query against the SQLite database %q. Returns JSON: columns, rows (arrays in column order), and whether rows were cut (at most %d rows). "+
			"List the tables with: SELECT name, sql FROM sqlite_schema WHERE type = 'table'.", filepath.Base(t.opts.Path), t.opts.MaxRows),
		Parameters: objectSchema([]prop{
			{"query", map[string]any{"type": "string", "minLength": 1, "description": "one SQLite SELECT (or WITH, PRAGMA, EXPLAIN) statement"}},
		}, "query"),
		Idempotent: true,
	}
}

type sqlQueryArgs struct {
	Query string `json:"query"`
}

// sqlResult is the JSON the model reads.
type sqlResult struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated"`
	Note      string   `json:"note,omitempty"`
}

func (t *sqlQuery) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	if t.err != nil {
		return failf(call, "misconfigured: %v", t.err)
	}
	var a sqlQueryArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	if strings.TrimSpace(a.Query) == "" {
		return failf(call, "the query is empty")
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	res, err := t.query(ctx, a.Query)
	switch {
	case parent.Err() != nil:
		return interrupted(call, parent.Err())
	case ctx.Err() != nil:
		return failf(call, "the query did not finish within %s and was interrupted", t.opts.Timeout)
	case err != nil:
		return failf(call, "%v", err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return failf(call, "cannot encode the result: %v", err)
	}
	return core.ToolResult{CallID: call.ID, Output: string(out)}
}

// query opens the database read-only, runs q, and collects at most MaxRows.
func (t *sqlQuery) query(ctx context.Context, q string) (*sqlResult, error) {
	if _, err := os.Stat(t.opts.Path); err != nil {
		return nil, fmt.Errorf("the database is unavailable: %v", errText(err))
	}
	dsn, err := sqliteURI(t.opts.Path, "mode=ro&_query_only=1")
	if err != nil {
		return nil, err
	}
	db, conn, err := openReadOnly(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, sqlError(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, sqlError(err)
	}
	res := &sqlResult{Columns: cols, Rows: [][]any{}}
	for rows.Next() {
		if len(res.Rows) == t.opts.MaxRows {
			res.Truncated = true
			res.Note = fmt.Sprintf("only the first %d rows are shown; narrow the query (WHERE, LIMIT/OFFSET, aggregates)", t.opts.MaxRows)
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, sqlError(err)
		}
		for i, v := range vals {
			vals[i] = jsonValue(v)
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, sqlError(err)
	}
	return res, nil
}

// sqliteURI returns a file: URI for path with the given query, escaping
// the characters ('?', '#', '%', spaces) that would otherwise end or change
// the file name.
func sqliteURI(path, query string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + query, nil
}

// jsonValue turns a scanned SQLite value into one JSON can encode:
// text as a string, a blob as text when it is UTF-8 and as x'hex' when not,
// infinities as strings, times in RFC 3339.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		h := hex.EncodeToString(x[:min(len(x), maxBlobHex)])
		if len(x) > maxBlobHex {
			return fmt.Sprintf("x'%s...' (%d bytes)", h, len(x))
		}
		return "x'" + h + "'"
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprint(x)
		}
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}
