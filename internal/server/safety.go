package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// Defaults of the service's safety settings (Config).
const (
	DefaultMaxStreams  = 512
	DefaultBodyTimeout = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
	// retryAfterSeconds is what a 429 or 503 tells a client to wait.
	retryAfterSeconds = "5"
)

// loopbackHosts are the Host names a server without tokens answers to
// besides Config.AllowedHosts: a page of another site that rebinds its
// own name to 127.0.0.1 still sends its own name, and is refused.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostAllowed reports whether a request's Host header names this server:
// always with tokens (a token, not the name, is the credential); without,
// a loopback name (or a subdomain of localhost) or one of AllowedHosts.
func (s *Server) hostAllowed(r *http.Request) bool {
	if len(s.cfg.Tokens) > 0 {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if slices.Contains(loopbackHosts, host) || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.cfg.AllowedHosts {
		if strings.EqualFold(strings.TrimSuffix(a, "."), host) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a state-changing request may come from
// the page that sent it: no Origin (not a browser, or a same-origin
// navigation), the server's own origin, or a CORS origin the operator
// allows. With tokens the bearer token decides (a browser never attaches
// one by itself to a POST).
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if len(s.cfg.Tokens) > 0 || origin == "" {
		return true
	}
	if s.corsAllows(origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// jsonBody reports whether a request declares a JSON body: a page of
// another site can send text/plain, a form or multipart without a
// preflight, never application/json.
func jsonBody(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// carriesBody reports whether a request's method carries a body to decode.
func carriesBody(r *http.Request) bool {
	return r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch
}

// changes reports whether a request's method may change something.
func changes(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// screen applies the rules of a request before authentication: the Host
// header, the Origin and Content-Type of a state-changing request, and a
// deadline for its body. It answers a refusal itself and returns false.
func (s *Server) screen(w http.ResponseWriter, r *http.Request) bool {
	if !s.hostAllowed(r) {
		writeError(w, errorf(http.StatusMisdirectedRequest, codeForbiddenHost,
			"this server does not answer to the host %q: without tokens it answers to loopback names and --allowed-hosts", r.Host))
		return false
	}
	if !changes(r) {
		return true
	}
	if !s.originAllowed(r) {
		writeError(w, errorf(http.StatusForbidden, codeForbiddenOrigin,
			"requests from the origin %q are refused: allow it with --cors, or configure tokens", r.Header.Get("Origin")))
		return false
	}
	if carriesBody(r) && !jsonBody(r) {
		writeError(w, errorf(http.StatusUnsupportedMediaType, codeMediaType,
			"a %s needs Content-Type: application/json (even with an empty body)", r.Method))
		return false
	}
	// A body that trickles in holds a connection and a worker's memory:
	// it must arrive within the body timeout.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	return true
}

// securityHeaders are sent with every response.
func securityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
}

// streamGate bounds the event streams and long polls open at once; each
// holds a connection and a goroutine for as long as a client listens.
type streamGate struct {
	open atomic.Int64
	max  int64
}

// limitStreams refuses a stream past the bound with 429 and Retry-After.
func limitStreams(next func(*Server, http.ResponseWriter, *http.Request)) func(*Server, http.ResponseWriter, *http.Request) {
	return func(s *Server, w http.ResponseWriter, r *http.Request) {
		if s.streams.open.Add(1) > s.streams.max {
			s.streams.open.Add(-1)
			w.Header().Set("Retry-After", retryAfterSeconds)
			writeError(w, errorf(http.StatusTooManyRequests, codeTooManyStreams,
				"%d event streams are open, the most this server keeps (--max-streams); try again later", s.streams.max))
			return
		}
		defer s.streams.open.Add(-1)
		next(s, w, r)
	}
}

// errorWriter is the response writer the handlers see: it keeps the
// server at hand for writeError, which logs what it does not tell a
// client (driver errors, paths). Flush and Unwrap reach the connection.
type errorWriter struct {
	http.ResponseWriter
	s *Server
}

func (w *errorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *errorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serverWriter finds the errorWriter under w's wrappers; nil when there is
// none (a handler called outside Handler, in tests).
func serverWriter(w http.ResponseWriter) *errorWriter {
	for {
		switch x := w.(type) {
		case *errorWriter:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// unavailable reports whether err says the store cannot be reached now (a
// connection refused, reset or timed out, a database restarting or out of
// space), as opposed to a fault in a request or a record.
func unavailable(err error) bool { return store.Unavailable(err) }

// absPath matches an absolute file path in an error's text.
var absPath = regexp.MustCompile(`(^|[\s"'(=])(/[^\s"':)]+)`)

// scrubPaths removes the server's directories from a message a client
// reads: an agent file is named relative to the agents directory, any
// other absolute path by its last element.
func (s *Server) scrubPaths(msg string) string {
	if s.agents != nil && s.agents.dir != "" {
		msg = strings.ReplaceAll(msg, s.agents.dir+"/", "")
	}
	return absPath.ReplaceAllStringFunc(msg, func(m string) string {
		lead, p := "", m
		if len(m) > 0 && m[0] != '/' {
			lead, p = m[:1], m[1:]
		}
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			p = p[i+1:]
		}
		return lead + p
	})
}

// holderID stands for a lease holder's owner string when the operator
// has not exposed host names and pids: stable for one holder, so a client
// can still tell two holders apart.
func holderID(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return "holder-" + hex.EncodeToString(sum[:6])
}

// runOf is the package's runOf with the holder's host and pid hidden
// unless Config.ExposeHolders.
func (s *Server) runOf(ri store.RunInfo, now time.Time) apiRun {
	run := runOf(ri, now)
	if h := run.Holder; h != nil && !s.cfg.ExposeHolders {
		h.Owner, h.Host, h.PID = holderID(h.Owner), "", 0
	}
	return run
}

// readError is the error of a request body that could not be read whole:
// over the limit (413) or not arrived in time (408).
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return classify(err)
	}
	return errorf(http.StatusRequestTimeout, codeTimeout, "the body did not arrive whole: %v", err)
}

// describeInternal is what a client reads of an error the server cannot
// place: never the driver's words, which the log keeps.
func describeInternal(status int) string {
	if status == http.StatusServiceUnavailable {
		return "the store is unavailable; try again shortly"
	}
	return fmt.Sprintf("internal error (%d); the server's log has the details", status)
}
