package server

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// TestAgentsOnlyFromTheDirectory: a request names an agent; a name with a
// path separator or "..", an absolute path, a hidden or overlong name, or
// a file that resolves outside the directory is refused, on every route
// that takes an agent, and nothing is created.
func TestAgentsOnlyFromTheDirectory(t *testing.T) {
	dir := agentsDir(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "evil.toml"), []byte("name = \"evil\"\n[models.primary]\nprovider = \"script\"\nscript = \"x.jsonl\"\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "x.jsonl"), []byte(`{"text": "pwned"}`+"\n"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "evil.toml"), filepath.Join(dir, "evil.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{Workers: 1, AgentsDir: dir})
	var done apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi", "options": map[string]string{"wait": "5s"}}).json(t, &done)
	bad := []string{"../quick", "sub/evil", "evil", "/etc/passwd", "..", ".", ".quick", "quick/", "quick.toml", `..\quick`,
		"quick\x00", strings.Repeat("a", 65), "", filepath.Join(outside, "evil")}
	for _, name := range bad {
		bodies := map[string]any{
			"/v1/runs":                        map[string]any{"agent": name, "input": "hi"},
			"/v1/runs/" + done.ID + "/fork":   map[string]any{"agent": name, "at": 1},
			"/v1/runs/" + done.ID + "/replay": map[string]any{"agent": name},
			"/v1/runs/" + done.ID + "/resume": map[string]any{"agent": name},
		}
		for path, body := range bodies {
			if name == "" && path != "/v1/runs" {
				continue // no agent: the run's own
			}
			r := f.do("POST", path, body)
			if r.status < 400 || r.status >= 500 || (r.code(t) != codeUnknownAgent && r.code(t) != codeBadRequest) {
				t.Errorf("agent %q on %s: %d %s", name, path, r.status, r.body)
			}
		}
	}
	var list runList
	f.do("GET", "/v1/runs", nil).json(t, &list)
	if len(list.Runs) != 1 {
		t.Fatalf("refused requests created runs: %+v", list.Runs)
	}
	var agents struct{ Agents []string }
	f.do("GET", "/v1/agents", nil).json(t, &agents)
	if strings.Join(agents.Agents, ",") != "broken,chat,manager,quick,researcher,shopper,slow,talker" {
		t.Fatalf("agents listed: %v", agents.Agents)
	}
	// A file inside the directory reached through a symlink inside it is
	// fine; an agent file that does not load is a 422.
	if err := os.Symlink(filepath.Join(dir, "quick.toml"), filepath.Join(dir, "alias.toml")); err != nil {
		t.Fatal(err)
	}
	want(t, f.do("POST", "/v1/runs", map[string]any{"agent": "alias", "input": "hi"}), http.StatusCreated)
	if r := f.do("POST", "/v1/runs", map[string]any{"agent": "broken", "input": "hi"}); r.status != http.StatusUnprocessableEntity || r.code(t) != codeInvalidAgent {
		t.Fatalf("broken agent: %d %s", r.status, r.body)
	}
	// The inspector's assets: names only, from the embedded files.
	for _, p := range []string{"/ui/..%2fserver.go", "/ui/%2e%2e%2fserver.go", "/ui/server.go", "/ui/.hidden.js", "/ui/app.js.map"} {
		if r := f.do("GET", p, nil); r.status != http.StatusNotFound || strings.Contains(string(r.body), "package server") {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
}

// TestRunIDsAreUnguessable: ids carry 128 random bits after their time.
func TestRunIDsAreUnguessable(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	shape := regexp.MustCompile(`^r\d{8}-\d{6}-[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 20 {
		var run apiRun
		f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}).json(t, &run)
		if !shape.MatchString(run.ID) || seen[run.ID[len(run.ID)-26:]] {
			t.Fatalf("run id %q", run.ID)
		}
		seen[run.ID[len(run.ID)-26:]] = true
	}
}

// TestEveryInputIsBounded: a body over the limit is 413 and creates
// nothing; an input over the input limit too; list, step and wait
// parameters out of range are 400; headers over 64 KiB are refused.
func TestEveryInputIsBounded(t *testing.T) {
	f := newFixture(t, Config{Workers: 1, MaxBody: 4 << 10})
	big := strings.Repeat("x", 8<<10)
	if r := f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": big}); r.status != http.StatusRequestEntityTooLarge || r.code(t) != codeTooLarge {
		t.Fatalf("big body: %d %s", r.status, r.body)
	}
	var paused apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &paused)
	if r := f.do("POST", "/v1/runs/"+paused.ID+"/results", `[{"tool_call_id": "call_approve", "result": "`+big+`"}]`); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("big results: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/v1/runs/"+paused.ID, nil); !strings.Contains(string(r.body), `"awaiting_tool_results"`) {
		t.Fatalf("refused results changed the run: %s", r.body)
	}
	g := newFixture(t, Config{Workers: 1, MaxBody: 1 << 20})
	if r := g.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": strings.Repeat("x", maxInput+1)}); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("big input: %d %s", r.status, r.body)
	}
	for _, q := range []string{
		"/v1/runs?limit=201", "/v1/runs?limit=-1", "/v1/runs?status=nope", "/v1/runs?cursor=AAAA",
		"/v1/runs/" + paused.ID + "/steps?from=-1", "/v1/runs/" + paused.ID + "/steps?limit=5001",
		"/v1/runs/" + paused.ID + "/events?wait=6m&after=0", "/v1/runs/" + paused.ID + "/events?wait=1s&after=x",
	} {
		if r := f.do("GET", q, nil); r.status != http.StatusBadRequest || r.code(t) != codeBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	for name, body := range map[string]string{
		"unknown field": `{"agent": "quick", "input": "hi", "script": "/etc/passwd"}`,
		"two values":    `{"agent": "quick", "input": "hi"} {}`,
		"wait too long": `{"agent": "quick", "input": "hi", "options": {"wait": "1h"}}`,
		"not an object": `["quick"]`,
		"empty":         ``,
	} {
		if r := f.do("POST", "/v1/runs", body); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}

	// Headers, on the server as Serve runs it.
	srv, err := New(Config{Store: openStore(t), AgentsDir: agentsDir(t), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("y", 128<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("big header: %d", resp.StatusCode)
	}
}

// TestAuthentication: with tokens, the API needs one (Authorization:
// Bearer); the cookie is taken for GET only, so another site cannot make
// a browser change a run; the page, its assets and /healthz need none.
func TestAuthentication(t *testing.T) {
	const token = "0123456789abcdef-test-token"
	f := newFixture(t, Config{Workers: 1, Tokens: []string{token}})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"})
	if r.status != http.StatusUnauthorized || r.code(t) != codeUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
	for _, h := range [][]string{{"Authorization", "Bearer wrong-token-0123456789"}, {"Authorization", "Bearer "}, {"Authorization", token},
		{"Authorization", "Basic " + token}, {"Cookie", "stepwise_token=" + token}} {
		if r := f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, h...); r.status != http.StatusUnauthorized {
			t.Errorf("%v: %d", h, r.status)
		}
	}
	r = f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi"}, "Authorization", "Bearer "+token)
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	for _, p := range []string{"/v1/runs", "/v1/runs/" + run.ID, "/v1/runs/" + run.ID + "/steps", "/openapi.json", "/v1/agents"} {
		if r := f.do("GET", p, nil); r.status != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d", p, r.status)
		}
		if r := f.do("GET", p, nil, "Cookie", "stepwise_token="+token); r.status != http.StatusOK {
			t.Errorf("GET %s with the cookie: %d", p, r.status)
		}
	}
	// A token a cookie cannot hold verbatim, URL-encoded as the page sets it.
	odd := "odd token;with \"quotes\"=%+"
	g := newFixture(t, Config{Workers: 1, Tokens: []string{odd}})
	if r := g.do("GET", "/v1/runs", nil, "Cookie", "stepwise_token="+url.QueryEscape(odd)); r.status != http.StatusOK {
		t.Errorf("GET with the URL-encoded cookie: %d", r.status)
	}
	for _, p := range []string{"/", "/ui/app.js", "/healthz"} {
		if r := f.do("GET", p, nil); r.status != http.StatusOK {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
	if r := f.do("GET", "/", nil); strings.Contains(string(r.body), token) {
		t.Fatal("the page holds the token")
	}
}

// TestListeningAndCORS: without tokens the server refuses an address
// beyond loopback; CORS headers are sent only for configured origins.
func TestListeningAndCORS(t *testing.T) {
	st := openStore(t)
	srv, err := New(Config{Store: st, AgentsDir: agentsDir(t), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:80"} {
		if err := srv.ListenAndServe(ctx, addr); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s without tokens: %v", addr, err)
		}
	}
	cancel()
	withToken, err := New(Config{Store: st, AgentsDir: agentsDir(t), Workers: 1, Tokens: []string{"0123456789abcdef-test"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- withToken.ListenAndServe(ctx, "0.0.0.0:0") }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("0.0.0.0 with a token: %v", err)
	}

	f := newFixture(t, Config{Workers: 1})
	r := f.do("GET", "/v1/runs", nil, "Origin", "https://evil.example")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS is on by default")
	}
	if r := f.do("OPTIONS", "/v1/runs", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST"); r.header.Get("Access-Control-Allow-Origin") != "" || r.status < 400 {
		t.Fatalf("preflight by default: %d %v", r.status, r.header)
	}
	g := newFixture(t, Config{Workers: 1, CORSOrigins: []string{"https://app.example"}})
	if r := g.do("OPTIONS", "/v1/runs", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST"); r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("preflight from an allowed origin: %d %v", r.status, r.header)
	}
	if r := g.do("GET", "/v1/runs", nil, "Origin", "https://other.example"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS for an origin not configured")
	}
}

// openStore opens a SQLite store in a temporary directory, closed when t
// ends.
func openStore(t *testing.T) *sqlite.SQLite {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "serve.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
