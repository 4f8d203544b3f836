package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Errors a store returns; match them with errors.Is. Every error names the
// run (and step, where there is one) it is about.
var (
	// ErrNotFound: no such run, step, intent, memory entity or database.
	ErrNotFound = errors.New("not found")
	// ErrExists: a run with that id is already stored.
	ErrExists = errors.New("already exists")
	// ErrCorrupt: a stored record fails its checksum or does not decode.
	// A corrupt record is reported, never used. Decoding failures also
	// match core.ErrCorrupt.
	ErrCorrupt = errors.New("corrupt record")
	// ErrSeq: a checkpoint's sequence number is not the run's last plus one.
	ErrSeq = errors.New("out-of-order checkpoint")
	// ErrNotAppend: a checkpoint's messages do not extend the run's stored
	// message log (the log is append-only).
	ErrNotAppend = errors.New("messages do not extend the run's log")
	// ErrEnded: the run has completed, failed or been cancelled; its
	// history is closed.
	ErrEnded = errors.New("run has ended")
	// ErrConflict: an intent or outcome was recorded before with different
	// contents.
	ErrConflict = errors.New("conflicts with what is recorded")
	// ErrNewerSchema: the database was written by a newer stepwise.
	ErrNewerSchema = errors.New("database schema is newer than this build")
	// ErrUnavailable: the store cannot be reached or cannot write now (a
	// lost connection, a server restarting, a full disk, SQLite busy past
	// its timeout), and may answer again. Unavailable recognises it, and
	// the drivers' own errors of that kind.
	ErrUnavailable = errors.New("store unavailable")
)

// Unavailable reports whether err says the store is unavailable for now
// (see ErrUnavailable), not that the request was wrong: the one place
// that classifies transient store failures, for the run loop's retries
// and the service's 503s. A cancelled context, a lost lease and the
// store's other sentinel errors are never unavailable.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	for _, e := range []error{context.Canceled, ErrLeaseLost, ErrBusy, ErrNotFound, ErrExists, ErrCorrupt, ErrSeq, ErrNotAppend, ErrEnded, ErrConflict, ErrNewerSchema} {
		if errors.Is(err, e) {
			return false
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, syscall.ENOSPC, syscall.ETIMEDOUT, syscall.EIO, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	// PostgreSQL's classes 08 (connection exception), 53 (insufficient
	// resources) and 57P (the server shutting down or restarting), read
	// through the SQLSTATE method of the driver's error.
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		c := coded.SQLState()
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "53") || strings.HasPrefix(c, "57P")
	}
	// A driver that reports a lost connection, a full disk or a busy
	// database only in words (SQLite's SQLITE_BUSY and SQLITE_FULL, pgx's
	// closed connection).
	msg := strings.ToLower(err.Error())
	for _, w := range []string{"conn closed", "connection refused", "connection reset", "broken pipe", "database is locked", "database is busy",
		"database or disk is full", "disk is full", "no space left", "failed to connect", "server closed the connection", "unexpected eof", "disk i/o error"} {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}
