package tools

import "time"

// DefaultTermGrace is how long a supervised command has to exit after a
// SIGTERM before everything it started is killed.
const DefaultTermGrace = time.Second

// SuperviseOptions configures Supervise. Zero values mean the defaults.
type SuperviseOptions struct {
	// TermGrace is how long the command has to exit once the supervisor is
	// sent SIGTERM or SIGINT, which it passes on to the command's process;
	// then it kills everything (0: DefaultTermGrace). A caller that follows
	// SIGTERM with SIGKILL must wait longer than this: SIGKILL ends the
	// supervisor before it can clean up.
	TermGrace time.Duration
}

func (o *SuperviseOptions) termGrace() time.Duration {
	if o == nil || o.TermGrace <= 0 {
		return DefaultTermGrace
	}
	return o.TermGrace
}

// procExit is how the process a supervisor started ended.
type procExit struct {
	code   int    // -1 when it was killed by a signal or did not start
	signal string // the signal that ended it, if any
	err    error  // it did not start, or how it ended is unknown
}
