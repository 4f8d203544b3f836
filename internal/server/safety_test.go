package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/store/postgres"
)

// runCount is how many runs the server lists.
func runCount(t *testing.T, f *fixture) int {
	t.Helper()
	var list runList
	f.do("GET", "/v1/runs", nil).json(t, &list)
	return len(list.Runs)
}

// TestStateChangingNeedsJSON: a POST without Content-Type: application/json
// (what a page of another site can send without a preflight: text/plain, a
// form, multipart, none) is refused with 415 and changes nothing.
func TestStateChangingNeedsJSON(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	body := `{"agent": "quick", "input": "hi"}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx"} {
		r := f.do("POST", "/v1/runs", body, "Content-Type", ct)
		if r.status != http.StatusUnsupportedMediaType || r.code(t) != codeMediaType {
			t.Errorf("Content-Type %q: %d %s", ct, r.status, r.body)
		}
	}
	if n := runCount(t, f); n != 0 {
		t.Fatalf("refused requests created %d runs", n)
	}
	want(t, f.do("POST", "/v1/runs", body, "Content-Type", "application/json; charset=utf-8"), http.StatusCreated)
}

// TestForeignOriginRefused: with no tokens, a state-changing request from
// another site's page is refused (the pending approval stays pending);
// the server's own origin and the --cors origins are let through; with a
// token, the token decides.
func TestForeignOriginRefused(t *testing.T) {
	f := newFixture(t, Config{Workers: 1, CORSOrigins: []string{"https://app.example"}})
	var paused apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &paused)
	if paused.Status != "awaiting_tool_results" {
		t.Fatalf("not paused: %+v", paused)
	}
	approve := `[{"tool_call_id": "call_approve", "result": "approved"}]`
	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "null"} {
		r := f.do("POST", "/v1/runs/"+paused.ID+"/results", approve, "Origin", origin)
		if r.status != http.StatusForbidden || r.code(t) != codeForbiddenOrigin {
			t.Errorf("origin %s: %d %s", origin, r.status, r.body)
		}
		if r := f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, "Origin", origin); r.status != http.StatusForbidden {
			t.Errorf("create from %s: %d %s", origin, r.status, r.body)
		}
	}
	var now apiRun
	f.do("GET", "/v1/runs/"+paused.ID, nil).json(t, &now)
	if now.Status != "awaiting_tool_results" || len(now.Pending) != 1 {
		t.Fatalf("a refused approval changed the run: %+v", now)
	}
	if n := runCount(t, f); n != 1 {
		t.Fatalf("refused requests created runs: %d", n)
	}
	want(t, f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, "Origin", f.url), http.StatusCreated)
	want(t, f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, "Origin", "https://app.example"), http.StatusCreated)

	g := newFixture(t, Config{Workers: 1, Tokens: []string{"tok"}})
	want(t, g.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, "Origin", "https://evil.example", "Authorization", "Bearer tok"), http.StatusCreated)
}

// TestHostChecked: with no tokens, a request whose Host is not a loopback
// name or an allowed host is refused, reads included (DNS rebinding: a
// page whose own name resolves to 127.0.0.1 sends that name).
func TestHostChecked(t *testing.T) {
	f := newFixture(t, Config{Workers: 1, AllowedHosts: []string{"agents.internal"}})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.url, "http://"))
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.nip.io:" + port, "10.0.0.1"} {
		for _, m := range []string{"GET", "POST"} {
			r := f.do(m, "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, "Host", host)
			if r.status != http.StatusMisdirectedRequest || r.code(t) != codeForbiddenHost {
				t.Errorf("%s with Host %s: %d %s", m, host, r.status, r.body)
			}
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "agents.internal:" + port, "app.localhost:" + port} {
		want(t, f.do("GET", "/v1/runs", nil, "Host", host), http.StatusOK)
	}
	if n := runCount(t, f); n != 0 {
		t.Fatalf("refused requests created runs: %d", n)
	}
	g := newFixture(t, Config{Workers: 1, Tokens: []string{"tok"}})
	want(t, g.do("GET", "/v1/runs", nil, "Host", "runs.example.com", "Authorization", "Bearer tok"), http.StatusOK)
}

// TestSlowBodyAndIdleConnections: a body that stops arriving gets 408
// within the body timeout, and an idle kept-alive connection is closed.
func TestSlowBodyAndIdleConnections(t *testing.T) {
	s, err := New(Config{Store: openSQLite(t), AgentsDir: agentsDir(t), Workers: 1, BodyTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"agent\":")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a stalled body got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), codeTimeout) {
		t.Fatalf("stalled body: %d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the stalled body held the connection %s", d)
	}

	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	br := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v", err)
	} else {
		io.ReadAll(resp.Body)
	}
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection was not closed: %v", err)
	}
}

// TestEventStreamsCapped: past MaxStreams open streams a new one gets 429
// with Retry-After; once one closes, a new one is served.
func TestEventStreamsCapped(t *testing.T) {
	f := newFixture(t, Config{Workers: 1, MaxStreams: 2})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &run)
	open := func() *http.Response {
		req, _ := http.NewRequest("GET", f.url+"/v1/runs/"+run.ID+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a, b := open(), open()
	defer b.Body.Close()
	for _, r := range []*http.Response{a, b} {
		if r.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", r.StatusCode)
		}
	}
	c := open()
	body, _ := io.ReadAll(c.Body)
	c.Body.Close()
	if c.StatusCode != http.StatusTooManyRequests || c.Header.Get("Retry-After") == "" || !strings.Contains(string(body), codeTooManyStreams) {
		t.Fatalf("third stream: %d %q %s", c.StatusCode, c.Header.Get("Retry-After"), body)
	}
	a.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := open()
		d.Body.Close()
		if d.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream was not given back: %d", d.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSecurityHeaders: the inspector cannot be framed by another site,
// and every response carries the usual headers.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	for _, path := range []string{"/", "/ui/app.js", "/v1/runs", "/no-such-route"} {
		r := f.do("GET", path, nil)
		h := r.header
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	if csp := f.do("GET", "/", nil).header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("the page's policy lost its script rule: %s", csp)
	}
}

// TestNoHostsPathsOrPidsInResponses: a run's holder is an opaque id unless
// the operator exposes holders, and an agent file's error names it
// relative to the agents directory.
func TestNoHostsPathsOrPidsInResponses(t *testing.T) {
	host, _ := os.Hostname()
	dir := agentsDir(t)
	f := newFixture(t, Config{Workers: 1, AgentsDir: dir})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "slow", "input": "nap"}).json(t, &run)
	var held apiRun
	deadline := time.Now().Add(5 * time.Second)
	for held.Holder == nil && time.Now().Before(deadline) {
		f.do("GET", "/v1/runs/"+run.ID, nil).json(t, &held)
	}
	if held.Holder == nil {
		t.Fatal("the run never showed a holder")
	}
	for _, path := range []string{"/v1/runs/" + run.ID, "/v1/runs"} {
		body := string(f.do("GET", path, nil).body)
		if strings.Contains(body, host) || strings.Contains(body, `"pid"`) || strings.Contains(body, fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("%s shows the holder's host or pid: %s", path, body)
		}
	}
	if !strings.HasPrefix(held.Holder.Owner, "holder-") {
		t.Errorf("holder: %+v", held.Holder)
	}
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "broken", "input": "hi"})
	if r.status != http.StatusUnprocessableEntity || strings.Contains(string(r.body), dir) || !strings.Contains(string(r.body), "broken.toml") {
		t.Errorf("a broken agent: %d %s", r.status, r.body)
	}

	g := newFixture(t, Config{Workers: 1, ExposeHolders: true})
	g.do("POST", "/v1/runs", map[string]any{"agent": "slow", "input": "nap"}).json(t, &run)
	held = apiRun{}
	deadline = time.Now().Add(5 * time.Second)
	for held.Holder == nil && time.Now().Before(deadline) {
		g.do("GET", "/v1/runs/"+run.ID, nil).json(t, &held)
	}
	if held.Holder == nil || held.Holder.Host != host || held.Holder.PID != os.Getpid() {
		t.Errorf("exposed holder: %+v", held.Holder)
	}
}

// TestStoreOutageIs503: while the database cannot be reached, reads and
// writes answer 503 with Retry-After and the code unavailable, never the
// driver's words; once it is back, they work again.
func TestStoreOutageIs503(t *testing.T) {
	dsn, px := pgtest.Proxied(t)
	st, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{Workers: 1, Store: st})
	want(t, f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi", "options": map[string]string{"wait": "5s"}}), http.StatusCreated)

	px.Down()
	for _, req := range []struct {
		method, path string
		body         any
	}{{"GET", "/v1/runs", nil}, {"GET", "/v1/runs/nope", nil}, {"POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}}} {
		r := f.do(req.method, req.path, req.body)
		msg := string(r.body)
		if r.status != http.StatusServiceUnavailable || r.code(t) != codeUnavailable || r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s during the outage: %d %s", req.method, req.path, r.status, msg)
		}
		for _, leak := range []string{px.Addr(), "dial", "pgx", "connect", "SQLSTATE"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s %s tells the driver's words (%q): %s", req.method, req.path, leak, msg)
			}
		}
	}
	px.Up()
	deadline := time.Now().Add(10 * time.Second)
	for f.do("GET", "/v1/runs", nil).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the server did not recover after the outage")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScrubPaths: an error names an agent file relative to the agents
// directory and any other absolute path by its last element; URLs are
// left alone.
func TestScrubPaths(t *testing.T) {
	s := &Server{agents: &agents{dir: "/srv/agents"}}
	for in, want := range map[string]string{
		"/srv/agents/shop.toml:3:5: bad key":                "shop.toml:3:5: bad key",
		"open /home/me/secret/notes.txt: permission denied": "open notes.txt: permission denied",
		`script "/opt/x/s.jsonl" is missing`:                `script "s.jsonl" is missing`,
		"base_url http://127.0.0.1:8080/v1 refused":         "base_url http://127.0.0.1:8080/v1 refused",
		"model at https://api.example.com/v1/chat: 401":     "model at https://api.example.com/v1/chat: 401",
		"a ratio 3/4 and a date 2026/11/27 stay":            "a ratio 3/4 and a date 2026/11/27 stay",
	} {
		if got := s.scrubPaths(in); got != want {
			t.Errorf("scrubPaths(%q) = %q, want %q", in, got, want)
		}
	}
}
