package mcp

import (
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/shell/tools"
)

// inheritedEnv are the variables a stdio server inherits from the parent
// (the set other MCP clients pass, plus LANG and TMPDIR).
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

// defaultPath is a stdio server's PATH when the parent has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// stderrTail is how much of a stdio server's stderr is kept for messages.
const stderrTail = 2 << 10

// process is a started stdio server: what is needed to clean up after it and
// to explain its failures.
type process struct {
	// sup runs the server under a supervisor, which kills the server and
	// everything it started when it exits or is killed, and also when this
	// process dies (see tools.Supervisor).
	sup *tools.Supervisor
	// stderr is drained from a real pipe by our own goroutine, not by exec:
	// then Wait returns when the server exits even if a descendant still
	// holds the pipe, and kill can end the draining.
	stderr     *tail
	errR, errW *os.File
	drained    chan struct{}
}

// started closes the parent's copies of the pipe ends the server got, once
// the SDK has started (or failed to start) the process.
func (p *process) started() {
	if p != nil {
		p.sup.Started()
		p.errW.Close()
	}
}

// kill kills whatever is left of the server and of the processes it
// started, and stops draining its stderr.
func (p *process) kill() {
	if p == nil {
		return
	}
	_ = p.sup.Kill()
	p.errW.Close()
	select {
	case <-p.drained:
	case <-time.After(100 * time.Millisecond): // a descendant that could not be killed holds the pipe
	}
	p.errR.Close()
}

// transport builds how to reach the server: the Options hook, a command run
// under a supervisor, or a streamable HTTP endpoint.
func (m *Manager) transport(cfg ServerConfig) (mcp.Transport, *process, error) {
	if m.opts.Transport != nil {
		t, err := m.opts.Transport(cfg)
		return t, nil, err
	}
	if cfg.URL != "" {
		hc := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: cfg.Headers}}
		return &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc}, nil, nil
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = serverEnv(cfg.Env)
	// The SDK stops the server by closing its stdin, then after td sends
	// SIGTERM (which the supervisor passes on), then after td SIGKILL. The
	// supervisor kills everything halfway through the second wait, before a
	// SIGKILL would stop it from cleaning up.
	td := m.opts.shutdownTimeout() / 2
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = errW
	sup, err := tools.Supervise(cmd, &tools.SuperviseOptions{TermGrace: td / 2})
	if err != nil {
		errR.Close()
		errW.Close()
		return nil, nil, err
	}
	p := &process{sup: sup, stderr: &tail{max: stderrTail}, errR: errR, errW: errW, drained: make(chan struct{})}
	go func() {
		defer close(p.drained)
		var w io.Writer = p.stderr
		if m.opts.Stderr != nil {
			w = io.MultiWriter(p.stderr, m.opts.Stderr)
		}
		_, _ = io.Copy(w, errR)
	}()
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: td}, p, nil
}

// serverEnv is a stdio server's environment: the inherited variables, then
// extra, in a stable order.
func serverEnv(extra map[string]string) []string {
	vals := map[string]string{"PATH": defaultPath}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			vals[k] = v
		}
	}
	maps.Copy(vals, extra)
	env := make([]string, 0, len(vals))
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		env = append(env, k+"="+vals[k])
	}
	return env
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
}

// withStderr appends the server's last stderr output to err's message.
func (p *process) withStderr(err error) error {
	if p == nil || err == nil {
		return err
	}
	select {
	case <-p.drained: // the server exited: all of its stderr is in
	case <-time.After(50 * time.Millisecond):
	}
	if s := p.stderr.String(); s != "" {
		return &stderrError{err: err, stderr: s}
	}
	return err
}

type stderrError struct {
	err    error
	stderr string
}

func (e *stderrError) Error() string { return e.err.Error() + "; stderr: " + e.stderr }
func (e *stderrError) Unwrap() error { return e.err }
