package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/shell"
)

// ErrClosed is returned (and reported in tool results) once the manager is closed.
var ErrClosed = errors.New("mcp: manager is closed")

// UnavailableError is a call's error once its optional server is
// unavailable for good (see ServerConfig.Optional).
type UnavailableError struct {
	Server string
	Cause  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("mcp server %s is unavailable, its tools are withdrawn: %v", e.Server, e.Cause)
}

func (e *UnavailableError) Unwrap() error { return e.Cause }

// server is one configured server and its current session, if any.
type server struct {
	cfg ServerConfig
	m   *Manager

	// start is held while a session is being started, so that concurrent
	// callers share one start; unlike a mutex, waiting for it honours ctx.
	start chan struct{}

	mu      sync.Mutex // guards the fields below
	cur     *session   // nil: not started, or dropped after a failure
	starts  int        // sessions started (or attempted) so far
	lastErr error      // why the last session failed
	closed  bool
	// listed is the server's current tool list: nil until listed or
	// bound, replaced when the server says it changed.
	listed []*tool
	// dead is why an optional server was given up, and deadWhy the short
	// reason recorded (see giveUpLocked).
	dead    error
	deadWhy string

	// refreshing serializes refreshes of the tool list.
	refreshing sync.Mutex
	// progress maps the progress token of each call under way to where its
	// reports go.
	progress sync.Map // string -> func(shell.ToolProgress)
}

// session is one connection to a server (one process, for a stdio server).
type session struct {
	cs   *mcp.ClientSession
	proc *process // nil unless the manager started the process itself
}

// close ends the session and, for a stdio server, reaps the process (the
// SDK closes its stdin, then sends SIGTERM, then SIGKILL) and kills what is
// left of the processes it started. It reports only a failure to stop a
// process: how the server exited, or a remote server not acknowledging the
// end of its session, leaves nothing behind.
func (x *session) close() error {
	err := x.cs.Close()
	x.proc.kill()
	var exit *exec.ExitError
	if x.proc == nil || errors.As(err, &exit) {
		return nil
	}
	return err
}

// acquire returns the current session, starting the server when it has none.
func (s *server) acquire(ctx context.Context) (*session, error) {
	if x, err := s.current(); x != nil || err != nil {
		return x, err
	}
	select {
	case s.start <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.start }()

	s.mu.Lock()
	if x, err := s.currentLocked(); x != nil || err != nil {
		s.mu.Unlock()
		return x, err
	}
	if limit := s.cfg.maxRestarts(); s.starts > limit {
		err := fmt.Errorf("mcp server %s: not started again after %d restarts; last failure: %v", s.cfg.Name, limit, s.lastErr)
		s.mu.Unlock()
		return nil, err
	}
	s.starts++
	s.mu.Unlock()

	x, err := s.connect(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			s.starts-- // the run was interrupted: not the server's failure
		} else {
			s.lastErr = err
			why := whyNoStart
			if s.starts > 1 {
				why = whyNoRestart
			}
			if s.giveUpLocked(why, err) {
				return nil, &UnavailableError{Server: s.cfg.Name, Cause: err}
			}
		}
		return nil, err
	}
	if s.closed {
		s.m.closing.Add(1)
		go func() {
			defer s.m.closing.Done()
			_ = x.close()
		}()
		return nil, ErrClosed
	}
	s.cur = x
	return x, nil
}

func (s *server) current() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.currentLocked()
}

func (s *server) currentLocked() (*session, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if s.dead != nil {
		return nil, &UnavailableError{Server: s.cfg.Name, Cause: s.dead}
	}
	return s.cur, nil
}

// connect starts a session, bounded by the start timeout and by Close.
func (s *server) connect(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.startTimeout())
	defer cancel()
	stop := context.AfterFunc(s.m.ctx, cancel)
	defer stop()

	t, proc, err := s.m.transport(s.cfg)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stepwise", Version: "v1"}, s.clientOptions())
	if len(s.cfg.Roots) > 0 {
		client.AddRoots(roots(s.cfg.Roots)...) //nolint:staticcheck // deprecated in the newest protocol, still what servers read
	}
	cs, err := client.Connect(ctx, t, s.m.opts.session())
	proc.started()
	if err != nil {
		// The SDK closed the session (and reaped the process) if it had one.
		proc.kill()
		return nil, fmt.Errorf("mcp server %s: start: %w", s.cfg.Name, proc.withStderr(err))
	}
	return &session{cs: cs, proc: proc}, nil
}

// drop retires a session that failed, if it is still the current one; it is
// closed in the background (Manager.Close waits for it) and the next call
// starts the server again, if restarts remain. It says which, for messages.
func (s *server) drop(x *session, cause error) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == x {
		s.cur = nil
		s.lastErr = cause
		s.m.closing.Add(1)
		go func() {
			defer s.m.closing.Done()
			_ = x.close()
		}()
	}
	if s.closed {
		return "the servers are shutting down"
	}
	if s.starts > s.cfg.maxRestarts() {
		if s.giveUpLocked(whyNoRetries, cause) {
			return fmt.Sprintf("it is not restarted again (%d restarts allowed): the server is unavailable now and its tools are withdrawn", s.cfg.maxRestarts())
		}
		return fmt.Sprintf("it is not restarted again (%d restarts allowed)", s.cfg.maxRestarts())
	}
	return "it is restarted for the next call"
}

// clientOptions declare the roots capability only with roots to offer (a
// server that trusts the roots it is given would otherwise get none), and
// route list changes and progress to the server.
func (s *server) clientOptions() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	if len(s.cfg.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{} //nolint:staticcheck // see connect
	}
	return &mcp.ClientOptions{
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.m.background(s.refresh)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			token, _ := req.Params.ProgressToken.(string)
			if f, ok := s.progress.Load(token); ok {
				f.(func(shell.ToolProgress))(shell.ToolProgress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
			}
		},
	}
}

// roots are the roots a client offers: the URIs given, each named by the
// last element of its path.
func roots(uris []string) []*mcp.Root {
	out := make([]*mcp.Root, 0, len(uris))
	for _, r := range uris {
		name := r
		if u, err := url.Parse(r); err == nil {
			name = path.Base(u.Path)
		}
		out = append(out, &mcp.Root{URI: r, Name: name}) //nolint:staticcheck // see connect
	}
	return out
}

// shutdown marks the server closed and closes its session.
func (s *server) shutdown() error {
	s.start <- struct{}{} // wait for a start in progress (Close cancelled it)
	defer func() { <-s.start }()
	s.mu.Lock()
	x := s.cur
	s.cur, s.closed = nil, true
	s.mu.Unlock()
	if x == nil {
		return nil
	}
	if err := x.close(); err != nil {
		return fmt.Errorf("mcp server %s: close: %w", s.cfg.Name, err)
	}
	return nil
}
