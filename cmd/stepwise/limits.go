package main

import (
	"fmt"
	"io"
	"os"
)

// Limits on what the CLI reads whole: each is checked before the text is
// decoded or stored, so an oversized one costs at most its limit in
// memory and writes nothing. A run's input is bounded by the agent's
// shell.InputLimit (2 MiB by default), an agent file by
// agent.MaxFileBytes.
const (
	// maxResultsBytes bounds a results file (resume --results, fork
	// --result): what the default state limit could hold.
	maxResultsBytes = 8 << 20
)

// tooLargeError is a file or stream over its limit.
type tooLargeError struct {
	what  string
	size  int64 // -1 when only "more than limit" is known
	limit int64
}

func (e *tooLargeError) Error() string {
	got := "more than that"
	if e.size >= 0 {
		got = fmt.Sprintf("%d bytes", e.size)
	}
	mib := ""
	if e.limit%(1<<20) == 0 {
		mib = fmt.Sprintf(" (%d MiB)", e.limit>>20)
	}
	return fmt.Sprintf("%s may be at most %d bytes%s and this one is %s", e.what, e.limit, mib, got)
}

// readBounded reads path ("-": stdin) whole, refusing it (*tooLargeError)
// past limit bytes: a regular file by its size before reading it, a stream
// once limit+1 bytes have arrived. what names it in the error.
func (e *env) readBounded(path, what string, limit int64) ([]byte, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
			return nil, &tooLargeError{what: what, size: fi.Size(), limit: limit}
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &tooLargeError{what: what, size: -1, limit: limit}
	}
	return data, nil
}
