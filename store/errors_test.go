package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

type sqlState string

func (e sqlState) Error() string    { return "pg: " + string(e) }
func (e sqlState) SQLState() string { return string(e) }

// TestUnavailable: the one classifier of transient store failures.
func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{store.ErrUnavailable, true},
		{fmt.Errorf("checkpoint: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("write: %w", syscall.ENOSPC), true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{sqlState("57P01"), true},  // admin shutdown
		{sqlState("08006"), true},  // connection failure
		{sqlState("53100"), true},  // disk full
		{sqlState("23505"), false}, // unique violation
		{errors.New("database is locked"), true},
		{errors.New("conn closed"), true},
		{errors.New("syntax error"), false},
		{context.Canceled, false},
		{fmt.Errorf("%w: after %w", store.ErrLeaseLost, syscall.ECONNRESET), false},
		{fmt.Errorf("run r: %w", store.ErrSeq), false},
		{fmt.Errorf("run r: %w", store.ErrEnded), false},
	} {
		if got := store.Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
