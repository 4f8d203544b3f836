package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Provider answers model calls from a parsed script.
type Provider struct {
	name    string
	replies []reply
	offset  int
}

var (
	_ shell.ModelProvider   = (*Provider)(nil)
	_ shell.RequestRenderer = (*Provider)(nil)
)

// Load parses the script at path. Errors name the path as given.
func Load(path string) (*Provider, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open script: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a script from r; name identifies it in errors.
func Parse(r io.Reader, name string) (*Provider, error) {
	replies, err := parse(r, name)
	if err != nil {
		return nil, err
	}
	return &Provider{name: name, replies: replies}, nil
}

// Len is the number of replies in the script.
func (p *Provider) Len() int { return len(p.replies) }

// WithOffset returns a copy that answers call number c with reply c-n, for
// a run forked onto a new script after n model calls.
func (p *Provider) WithOffset(n int) *Provider {
	q := *p
	q.offset = n
	return &q
}

// ErrScriptError marks the errors a script asks for with an "error" line.
var ErrScriptError = errors.New("scripted provider error")

// Complete returns the reply for call number req.Call (see the package doc).
func (p *Provider) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	if err := ctx.Err(); err != nil {
		return core.ModelReply{}, err
	}
	rep, err := p.replyFor(req.Call)
	if err != nil {
		return core.ModelReply{}, err
	}
	if rep.delay > 0 {
		t := time.NewTimer(rep.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return core.ModelReply{}, ctx.Err()
		case <-t.C:
		}
	}
	if rep.isErr {
		return core.ModelReply{}, fmt.Errorf("script %q line %d: %w: %s", p.name, rep.line, ErrScriptError, rep.err)
	}
	out := rep.reply
	out.Calls = append([]core.NativeCall(nil), rep.reply.Calls...)
	return out, nil
}

// replyNumber is the number (from 1) of the reply that answers call.
func (p *Provider) replyNumber(call int) int { return call - p.offset }

func (p *Provider) replyFor(call int) (reply, error) {
	if call < 1 {
		return reply{}, permanentf("script %q: model call number %d is not valid; the runner must number model calls from 1 (ModelRequest.Call)", p.name, call)
	}
	i := p.replyNumber(call)
	if i < 1 || i > len(p.replies) {
		if p.offset == 0 {
			return reply{}, permanentf("script %q: no reply for model call %d (the script has %d)", p.name, call, len(p.replies))
		}
		return reply{}, permanentf("script %q: no reply for model call %d (reply %d with offset %d; the script has %d)", p.name, call, i, p.offset, len(p.replies))
	}
	return p.replies[i-1], nil
}

// permanentError is an error that retrying cannot fix: its message is the
// explanation alone, and errors.Is(err, shell.ErrModelPermanent) holds.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }
func (e *permanentError) Unwrap() error { return shell.ErrModelPermanent }

func permanentf(format string, args ...any) error {
	return &permanentError{msg: fmt.Sprintf(format, args...)}
}
