package shell

// NewRunID makes a run id the way a runner does by default: time-ordered
// and unguessable (r20261127-001500- and 26 random base32 letters). A
// server that must know a run's id before creating it (an idempotent
// request) draws one and gives it to a runner through Options.NewID.
func NewRunID() string { return newRunID() }
