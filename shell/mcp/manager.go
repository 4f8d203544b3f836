package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults for Options fields left at zero.
const (
	DefaultStartTimeout    = 60 * time.Second
	DefaultShutdownTimeout = 2 * time.Second
)

// maxPages bounds a tools/list: a server whose cursors never end is broken.
const maxPages = 1000

// Options tune a Manager; nil means the defaults.
type Options struct {
	// Transport, when set, replaces how every server is reached (tests pass
	// in-memory transports). It is called again for each restart.
	Transport func(ServerConfig) (mcp.Transport, error)
	// StartTimeout bounds starting a server and its MCP handshake
	// (default DefaultStartTimeout).
	StartTimeout time.Duration
	// Stderr, when set, receives what stdio servers write to their stderr;
	// it must be safe for concurrent writes. Either way the last 2 KiB of a
	// server's stderr are quoted in the error when it fails.
	Stderr io.Writer
	// ShutdownTimeout bounds stopping a stdio server: half of it after its
	// stdin is closed, then SIGTERM, after which the server has a quarter
	// of it before everything it started is killed (default
	// DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// Warn, when set, is told what goes wrong in the background: a tool
	// list that changed but could not be listed again, a tool of a changed
	// list that cannot be offered, an optional server given up.
	Warn func(string)
	// ProtocolVersion, when set, is the MCP protocol version offered to
	// every server (default: the SDK's newest; servers negotiate down).
	ProtocolVersion string
}

func (o Options) session() *mcp.ClientSessionOptions {
	if o.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion}
}

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return DefaultStartTimeout
}

func (o Options) shutdownTimeout() time.Duration {
	if o.ShutdownTimeout > 0 {
		return o.ShutdownTimeout
	}
	return DefaultShutdownTimeout
}

// Manager owns the MCP servers of one run. It is safe for concurrent use.
type Manager struct {
	servers []*server
	opts    Options

	ctx    context.Context // done once Close starts: cancels starts in progress
	cancel context.CancelFunc

	closing   sync.WaitGroup // sessions being closed in the background
	closeOnce sync.Once
	closeErr  error

	version atomic.Uint64 // see Version
	bgMu    sync.Mutex    // held to start background work, and by Close to stop it
	bg      sync.WaitGroup
	warned  map[string]bool // under bgMu: see warn
}

// NewManager validates the servers and returns their manager. Nothing starts
// until Tools or a tool's Run needs a server.
func NewManager(servers []ServerConfig, opts *Options) (*Manager, error) {
	if err := validateAll(servers); err != nil {
		return nil, err
	}
	m := &Manager{}
	if opts != nil {
		m.opts = *opts
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, cfg := range servers {
		cfg.Args = append([]string(nil), cfg.Args...)
		m.servers = append(m.servers, &server{cfg: cfg, m: m, start: make(chan struct{}, 1)})
	}
	return m, nil
}

// Tools starts every server, lists its tools (following pagination) and
// returns one shell.Tool per exposed tool, servers in config order and each
// server's tools in its order. A tool that cannot be offered (a name the core
// refuses, a schema it cannot check, allow-list names the server lacks) is
// left out with a warning. A server that cannot be started or listed is an
// error, the run would silently miss its tools, unless it is optional: then
// it is given up, with a warning, and Record says so.
func (m *Manager) Tools(ctx context.Context) (tools []shell.Tool, warnings []string, err error) {
	type listing struct {
		tools    []shell.Tool
		warnings []string
		err      error
	}
	out := make([]listing, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Go(func() {
			out[i].tools, out[i].warnings, out[i].err = s.tools(ctx)
		})
	}
	wg.Wait()
	var errs []error
	for i, l := range out {
		tools = append(tools, l.tools...)
		warnings = append(warnings, l.warnings...)
		if l.err != nil && m.servers[i].giveUp(l.err) {
			warnings = append(warnings, fmt.Sprintf("mcp server %s is unavailable, its tools are left out: %v", m.servers[i].cfg.Name, l.err))
		} else if l.err != nil {
			errs = append(errs, l.err)
		}
	}
	m.bgMu.Lock()
	for _, w := range warnings { // the caller shows these: a refresh does not again
		if m.warned == nil {
			m.warned = map[string]bool{}
		}
		if len(m.warned) < maxWarned {
			m.warned[w] = true
		}
	}
	m.bgMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return nil, warnings, err
	}
	return tools, warnings, nil
}

// tools lists one server's tools.
func (s *server) tools(ctx context.Context) ([]shell.Tool, []string, error) {
	x, err := s.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	listed, err := s.list(ctx, x)
	if err != nil {
		if ctx.Err() == nil && !isResponseError(err) {
			_ = s.drop(x, err)
		}
		return nil, nil, fmt.Errorf("mcp server %s: list tools: %w", s.cfg.Name, x.proc.withStderr(err))
	}
	offered, warnings := s.offer(listed)
	s.mu.Lock()
	s.listed = offered
	s.mu.Unlock()
	tools := make([]shell.Tool, len(offered))
	for i, t := range offered {
		tools[i] = t
	}
	return tools, warnings, nil
}

// giveUp gives an optional server up (see giveUpLocked).
func (s *server) giveUp(cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	return s.giveUpLocked(whyNoStart, cause)
}

// offer turns a server's listing into the tools it offers, with a warning
// for each tool left out.
func (s *server) offer(listed []*mcp.Tool) ([]*tool, []string) {
	var tools []*tool
	var warnings []string
	warn := func(format string, args ...any) {
		warnings = append(warnings, fmt.Sprintf("mcp server %s: ", s.cfg.Name)+fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	for _, t := range listed {
		if !s.cfg.exposes(t.Name) {
			continue
		}
		if seen[t.Name] {
			warn("tool %q is listed twice; the second is skipped", t.Name)
			continue
		}
		seen[t.Name] = true
		spec, err := s.spec(t)
		if err != nil {
			warn("tool %q skipped: %v", t.Name, err)
			continue
		}
		mt := &tool{spec: spec, remote: t.Name, srv: s}
		if t.OutputSchema != nil {
			if raw, err := json.Marshal(t.OutputSchema); err != nil {
				warn("tool %q: output schema: %v; its structured content is not checked", t.Name, err)
			} else if mt.out, err = compileOutputSchema(raw); err != nil {
				warn("tool %q: output schema: %v; its structured content is not checked", t.Name, err)
			} else {
				mt.outRaw = raw
			}
		}
		tools = append(tools, mt)
	}
	for _, n := range s.cfg.Allow {
		if !seen[n] {
			warn("allow names tool %q, which the server does not offer", n)
		}
	}
	return tools, warnings
}

// list pages through tools/list, bounded by the start timeout.
func (s *server) list(ctx context.Context, x *session) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.startTimeout())
	defer cancel()
	var all []*mcp.Tool
	params := &mcp.ListToolsParams{}
	seen := map[string]bool{}
	for range maxPages {
		res, err := x.cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("the server repeated cursor %q", res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, fmt.Errorf("more than %d pages of tools", maxPages)
}

// spec turns a listed tool into the core's description of it.
func (s *server) spec(t *mcp.Tool) (core.Tool, error) {
	name := ToolName(s.cfg.Name, t.Name)
	if !core.ValidToolName(name) {
		return core.Tool{}, fmt.Errorf("name %q is not a valid tool name (1-64 letters, digits, '_', '-' or '.')", name)
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return core.Tool{}, fmt.Errorf("input schema: %v", err)
	}
	params, err := NormalizeSchema(raw)
	if err != nil {
		return core.Tool{}, fmt.Errorf("input schema: %v", err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	spec := core.Tool{Name: name, Description: desc, Parameters: params, Mode: core.ModeMCP, Idempotent: s.cfg.Idempotent}
	if err := CheckSpec(spec); err != nil {
		return core.Tool{}, err
	}
	return spec, nil
}

// CheckSpec reports whether the core accepts spec, using the core's own
// validation of a config holding just this tool.
func CheckSpec(spec core.Tool) error {
	cfg := core.DefaultConfig()
	cfg.Tools = []core.Tool{spec}
	if err := cfg.Validate(); err != nil {
		msg := strings.TrimPrefix(err.Error(), core.ErrInvalidConfig.Error()+": ")
		return errors.New(strings.TrimPrefix(msg, fmt.Sprintf("tools[0] %q: ", spec.Name)))
	}
	return nil
}

// ToolSpecs returns the specs of tools (Record is what a run records).
func ToolSpecs(tools []shell.Tool) []core.Tool {
	specs := make([]core.Tool, len(tools))
	for i, t := range tools {
		specs[i] = t.Spec()
	}
	return specs
}

// Close shuts every server down and waits until they are gone; no child
// process is left behind. Calls after Close fail with ErrClosed. Close may
// be called more than once; later calls return the first one's result.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.bgMu.Lock()
		m.cancel()
		m.bgMu.Unlock()
		m.bg.Wait() // refreshes end: their context is done
		errs := make([]error, len(m.servers))
		var wg sync.WaitGroup
		for i, s := range m.servers {
			wg.Go(func() { errs[i] = s.shutdown() })
		}
		wg.Wait()
		m.closing.Wait()
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}
