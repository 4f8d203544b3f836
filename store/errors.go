package store

import "errors"

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
)
