package main

import (
	"io"
	"sync"

	"github.com/stepwise-agent/stepwise/shell"
)

// redactingWriter writes text with secrets replaced by markers. A secret
// split across two writes is still caught: the end of what was written
// that could be the start of a secret is held back until the next write
// (or Flush); the rest goes out at once, so a reply streamed to a
// terminal shows as it arrives.
type redactingWriter struct {
	mu sync.Mutex
	w  io.Writer
	s  *shell.StreamRedactor
}

func newRedactingWriter(w io.Writer, x shell.Redactor) io.Writer {
	if rw, ok := w.(*redactingWriter); ok {
		rw.Flush()
		w = rw.w
	}
	return &redactingWriter{w: w, s: x.Stream()}
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out := r.s.Write(string(p)); out != "" {
		if _, err := io.WriteString(r.w, out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back.
func (r *redactingWriter) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out := r.s.Flush(); out != "" {
		_, _ = io.WriteString(r.w, out)
	}
}

// flushAll flushes the command's streams (on exit).
func (e *env) flushAll() {
	for _, w := range []io.Writer{e.stdout, e.stderr} {
		if rw, ok := w.(*redactingWriter); ok {
			rw.Flush()
		}
	}
}
