package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
}

var _ shell.Tool = (*tool)(nil)

// Spec describes the tool as the core sees it.
func (t *tool) Spec() core.Tool { return t.spec }

// Run calls the tool under the server's per-call timeout. Every failure is a
// ToolResult with Error set. A timeout or a broken session also retires the
// session, so the next call starts the server again; a JSON-RPC error
// response does not (the server answered), nor does ctx being cancelled
// (the run was interrupted, not the server at fault).
func (t *tool) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	fail := func(format string, args ...any) core.ToolResult {
		return core.ToolResult{CallID: call.ID, Error: fmt.Sprintf(format, args...)}
	}
	// A server that cannot start, or fails under a call, may work on a
	// retry (an idempotent tool's retry policy decides).
	transient := func(format string, args ...any) core.ToolResult {
		r := fail(format, args...)
		r.Transient = true
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
	res, err := x.cs.CallTool(callCtx, params)
	if err == nil {
		r := formatResult(res)
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
		next := t.srv.drop(x, fmt.Errorf("a call %s", what))
		return transient("mcp server %s: %s; %s", name, what, next)
	default:
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
			err = fmt.Errorf("the server exited or closed the connection (%w)", err)
		}
		err = x.proc.withStderr(err)
		next := t.srv.drop(x, err)
		return transient("mcp server %s failed: %v; %s", name, err, next)
	}
}

// isResponseError reports whether err is the server's JSON-RPC error
// response, as opposed to a broken connection.
func isResponseError(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire)
}
