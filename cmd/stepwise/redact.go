package main

import (
	"bytes"
	"io"
	"sync"

	"github.com/stepwise-agent/stepwise/shell"
)

// redactingWriter writes whole lines with secrets replaced by markers. A
// secret split across two writes is still caught: text is held until its
// line ends (or Flush).
type redactingWriter struct {
	mu  sync.Mutex
	w   io.Writer
	x   shell.Redactor
	buf []byte
}

func newRedactingWriter(w io.Writer, x shell.Redactor) io.Writer {
	if rw, ok := w.(*redactingWriter); ok {
		rw.Flush()
		w = rw.w
	}
	return &redactingWriter{w: w, x: x}
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	// A spinner's carriage return ends a line on a terminal too.
	end := bytes.LastIndexAny(r.buf, "\n\r")
	if end < 0 {
		return len(p), nil
	}
	out := r.x.String(string(r.buf[:end+1]))
	r.buf = append(r.buf[:0], r.buf[end+1:]...)
	if _, err := io.WriteString(r.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held of an unfinished line.
func (r *redactingWriter) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		_, _ = io.WriteString(r.w, r.x.String(string(r.buf)))
		r.buf = r.buf[:0]
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
