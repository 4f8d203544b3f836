package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// Defaults of Config.
const (
	DefaultWorkers  = 64
	DefaultMaxBody  = 1 << 20
	DefaultGrace    = 30 * time.Second
	DefaultPoll     = 250 * time.Millisecond
	maxListLimit    = 200
	defaultPageSize = 50
)

// Config configures a Server. Zero values mean the defaults.
type Config struct {
	// Store is where runs live; required. The server does not close it.
	Store store.Store
	// AgentsDir holds the agent files runs are created from, by name
	// (NAME.toml); required.
	AgentsDir string
	// Workers is how many runs the server drives at once (DefaultWorkers).
	Workers int
	// Tokens are the bearer tokens that may call the API; none means no
	// authentication, which ListenAndServe allows on a loopback address
	// only.
	Tokens []string
	// CORSOrigins may call the API from a browser page of another origin
	// ("*" for any); none by default.
	CORSOrigins []string
	// MaxBody bounds a request body in bytes (DefaultMaxBody).
	MaxBody int64
	// Grace bounds how long a shutdown waits for the steps in flight to
	// checkpoint (DefaultGrace).
	Grace time.Duration
	// Poll is how often an event stream looks for steps another server
	// wrote (DefaultPoll).
	Poll time.Duration
	// Runner tunes the runner the workers drive runs with (Owner, LeaseTTL
	// are set by the server); its Observer, when set, is told about every
	// step along with the server's event streams (tracing).
	Runner shell.Options
	// Log receives one line per notable event (nil: discarded).
	Log io.Writer
	// AllowedHosts are the Host names a server without tokens answers to
	// besides loopback names (localhost, 127.0.0.1, ::1): a DNS name the
	// operator gave this machine. Any other Host is refused (421), which
	// stops a page that rebinds its own name to this address.
	AllowedHosts []string
	// ExposeHolders shows lease holders' host names and pids in API
	// responses; off, a holder is an opaque id.
	ExposeHolders bool
	// MaxStreams bounds the event streams (and long polls) open at once
	// (DefaultMaxStreams); past it a new one gets 429 with Retry-After.
	MaxStreams int
	// BodyTimeout bounds how long a request body may take to arrive
	// (DefaultBodyTimeout).
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection idle for that long
	// (DefaultIdleTimeout).
	IdleTimeout time.Duration
}

// Server is the HTTP API, its workers and the inspector.
type Server struct {
	cfg    Config
	runner *shell.Runner
	agents *agents
	hub    *hub
	mux    *http.ServeMux
	owner  string
	// runnerOpts are the runner's options (runnerFor).
	runnerOpts shell.Options
	// streams counts the event streams open now (Config.MaxStreams).
	streams streamGate

	wake     chan struct{} // a runnable run may be waiting
	ready    chan string   // runs this server made runnable, for a worker (dispatch)
	created  chan heldRun  // runs created held, for a worker waiting (handOver)
	idle     atomic.Int64  // workers waiting for work, less reservations (reserve)
	stop     chan struct{} // closed: workers take no more runs
	workCtx  context.Context
	workStop context.CancelCauseFunc
	workers  sync.WaitGroup

	logMu sync.Mutex
}

// New makes a server; Start starts its workers.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	ag, err := newAgents(cfg.AgentsDir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, agents: ag, hub: newHub(), wake: make(chan struct{}, 1), ready: make(chan string, cfg.Workers), created: make(chan heldRun), stop: make(chan struct{})}
	s.streams.max = int64(cfg.MaxStreams)
	ro := cfg.Runner
	if ro.Owner == "" {
		ro.Owner = shell.NewOwner()
	}
	s.owner = ro.Owner
	ro.Observer = shell.Join(s.hub, cfg.Runner.Observer)
	s.runner, s.runnerOpts = shell.NewRunner(cfg.Store, &ro), ro
	s.workCtx, s.workStop = context.WithCancelCause(context.Background())
	s.mux = s.routes()
	return s, nil
}

// Handler is the server's HTTP handler: the Host, Origin and Content-Type
// rules, security headers, authentication, CORS and body limits around the
// routes.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// Start starts the workers.
func (s *Server) Start() {
	for i := range s.cfg.Workers {
		s.workers.Add(1)
		go s.work(i)
	}
	s.poke()
}

// Shutdown stops taking runs, lets the steps in flight checkpoint (up to
// the grace period, then cuts them short), hands every run this server
// drives back (leases released, runs left runnable for other servers), and
// closes the agents' MCP servers.
func (s *Server) Shutdown() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.Grace):
		s.logf("shutdown: the grace period of %s passed; cutting the steps in flight short", s.cfg.Grace)
		s.workStop(shell.ErrHandOff)
		<-done
	}
	s.workStop(shell.ErrHandOff)
	s.hub.close()
	s.agents.close()
}

// ListenAndServe serves on addr until ctx ends, then shuts down. Without
// tokens it refuses an address that is not loopback.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	if len(s.cfg.Tokens) == 0 && !loopback(addr) {
		return fmt.Errorf("serve: %s is not a loopback address and no token is configured: set --tokens-file or STEPWISE_TOKENS, or listen on 127.0.0.1", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then shuts down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// No ReadTimeout or WriteTimeout: they would cut event streams short.
	// A body's deadline is set per request (Config.BodyTimeout).
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: 64 << 10}
	s.Start()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.logf("serving on http://%s (%d workers, owner %s)", ln.Addr(), s.cfg.Workers, s.owner)
	select {
	case err := <-errc:
		s.Shutdown()
		return err
	case <-ctx.Done():
	}
	s.logf("shutting down: no new runs; steps in flight finish (at most %s)", s.cfg.Grace)
	s.hub.close() // event streams end, so the HTTP server can stop
	shutCtx, cancel := context.WithTimeout(context.Background(), s.cfg.Grace)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	s.Shutdown()
	return nil
}

// loopback reports whether addr only listens on a loopback interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard applies the safety rules (see screen), security headers,
// authentication, CORS and the body limit.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := &errorWriter{ResponseWriter: rw, s: s}
		securityHeaders(w.Header())
		if r.Method != http.MethodOptions && !s.screen(w, r) {
			return
		}
		if r.Method == http.MethodOptions && !s.hostAllowed(r) {
			writeError(w, errorf(http.StatusMisdirectedRequest, codeForbiddenHost, "this server does not answer to the host %q", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && s.corsAllows(origin) {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Vary", "Origin")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stepwise"`)
			writeError(w, errorf(http.StatusUnauthorized, codeUnauthorized, "a valid bearer token is required (Authorization: Bearer TOKEN)"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		next.ServeHTTP(w, r)
	})
}

func (s *Server) corsAllows(origin string) bool {
	return slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin)
}

// authorized checks the bearer token. The inspector's page and its assets
// need none (they hold no data); a browser's event stream (EventSource
// cannot send headers) and page loads may carry it in the stepwise_token
// cookie, for GET requests only, so another site cannot make a browser
// change anything.
func (s *Server) authorized(r *http.Request) bool {
	if len(s.cfg.Tokens) == 0 || r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/") || r.URL.Path == "/healthz" {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok && r.Method == http.MethodGet {
		if c, err := r.Cookie("stepwise_token"); err == nil {
			// The page URL-encodes the token, which a cookie could not
			// hold verbatim otherwise.
			if v, err := url.QueryUnescape(c.Value); err == nil {
				token, ok = v, true
			}
		}
	}
	if !ok || token == "" {
		return false
	}
	for _, t := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return true
		}
	}
	return false
}

func (s *Server) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.cfg.Log, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}
