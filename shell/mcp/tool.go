package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// tool is one MCP tool of one server.
type tool struct {
	spec   core.Tool
	remote string // the tool's name on the server, without the prefix
	srv    *server
	// out checks the structured content of results when the tool declares
	// an output schema (outRaw, recorded with the run).
	out    *jsonschema.Resolved
	outRaw json.RawMessage
}

var _ shell.Tool = (*tool)(nil)

// Spec describes the tool as the core sees it.
func (t *tool) Spec() core.Tool { return t.spec }

// tokens numbers progress tokens, which must be unique among the calls under
// way in a process.
var tokens atomic.Uint64

// Run calls the tool under the server's per-call timeout, with a progress
// token whose notifications go to rc.Progress. Every failure is a
// ToolResult with Error set. A call that times out is cancelled (the SDK
// sends notifications/cancelled) and the server is pinged: a server that
// answers within ServerConfig.CancelGrace keeps its session; one that does
// not is stopped and started again on the next call, as after a broken
// session. A JSON-RPC error response does not retire the session (the
// server answered), nor does ctx being cancelled (the run was interrupted,
// not the server at fault).
func (t *tool) Run(ctx context.Context, call core.ToolCall, rc shell.RunContext) core.ToolResult {
	fail := func(format string, args ...any) core.ToolResult {
		return core.ToolResult{CallID: call.ID, Error: fmt.Sprintf(format, args...)}
	}
	// A server that cannot start, or fails under a call, may work on a
	// retry (an idempotent tool's retry policy decides); one given up
	// for good will not.
	transient := func(format string, args ...any) core.ToolResult {
		r := fail(format, args...)
		r.Transient = !t.srv.unavailable()
		return r
	}
	var args json.RawMessage
	if a := bytes.TrimSpace(call.Args); len(a) > 0 && string(a) != "null" {
		if a[0] != '{' {
			return fail("arguments must be a JSON object")
		}
		args = a
	}
	x, err := t.srv.acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fail("interrupted: %v", ctx.Err())
		}
		return transient("%v", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, t.srv.cfg.timeout())
	defer cancel()
	params := &mcp.CallToolParams{Name: t.remote}
	if args != nil {
		params.Arguments = args
	}
	if rc.Progress != nil {
		token := "stepwise-" + strconv.FormatUint(tokens.Add(1), 10)
		t.srv.progress.Store(token, rc.Progress)
		defer t.srv.progress.Delete(token)
		params.SetProgressToken(token)
	}
	res, err := x.cs.CallTool(callCtx, params)
	if err == nil {
		r := formatResult(res, t.out, t.srv.cfg.maxAttachment())
		r.CallID = call.ID
		return r
	}
	name := t.srv.cfg.Name
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return fail("interrupted: %v", ctx.Err())
	case isResponseError(err):
		return fail("mcp server %s refused the call: %v", name, err)
	case callCtx.Err() != nil:
		what := fmt.Sprintf("timed out after %s", t.srv.cfg.timeout())
		if ctx.Err() != nil {
			what = "timed out" // the caller's deadline, not ours
		}
		return transient("mcp server %s: the call %s and was cancelled; %s", name, what, t.srv.afterCancel(ctx, x))
	default:
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
			err = fmt.Errorf("the server exited or closed the connection (%w)", err)
		}
		err = x.proc.withStderr(err)
		next := t.srv.drop(x, err)
		return transient("mcp server %s failed: %v; %s", name, err, next)
	}
}

// afterCancel checks that the server is still responsive after a call was
// cancelled: it must answer a ping within the cancellation grace. One that
// does not is stopped (and started again for the next call, if restarts
// remain). It says which, for the call's error.
func (s *server) afterCancel(ctx context.Context, x *session) string {
	grace := s.cfg.cancelGrace()
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	stop := context.AfterFunc(s.m.ctx, cancel) // Close cuts the wait short
	defer stop()
	err := x.cs.Ping(pctx, nil)
	if err == nil {
		return "the server answered a ping after the cancellation and keeps running"
	}
	if s.m.ctx.Err() != nil {
		return "the servers are shutting down"
	}
	cause := fmt.Errorf("it did not answer a ping within %s after a call was cancelled: %w", grace, err)
	return "it did not answer a ping within " + grace.String() + " after the cancellation, so it was stopped; " + s.drop(x, cause)
}

// unavailable reports whether the server was given up for good.
func (s *server) unavailable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead != nil
}

// isResponseError reports whether err is the server's JSON-RPC error
// response, as opposed to a broken connection.
func isResponseError(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire)
}
