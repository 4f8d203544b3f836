package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// fakeSearch serves canned answers: for the path and query the handler
// checks, and the status and body the test sets.
type fakeSearch struct {
	path   string
	check  func(r *http.Request)
	status int
	body   string
}

func (f *fakeSearch) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != f.path {
			t.Errorf("path %q, want %q", r.URL.Path, f.path)
		}
		if f.check != nil {
			f.check(r)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		fmt.Fprint(w, f.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const searxngBody = `{"query":"go","results":[
 {"title":"The Go <b>Programming</b> Language","url":"https://go.dev/","content":"Go is an open source   programming language &amp; more."},
 {"title":"","url":"https://pkg.go.dev/","content":""},
 {"title":"no url","url":"","content":"skipped"},
 {"title":"Third","url":"https://example.com/3","content":"three"}]}`

const braveBody = `{"type":"search","web":{"results":[
 {"title":"Brave <strong>one</strong>","url":"https://one.example/","description":"first &quot;hit&quot;"},
 {"title":"Brave two","url":"https://two.example/","description":"second"}]}}`

func TestWebSearchSearxNG(t *testing.T) {
	t.Parallel()
	f := &fakeSearch{path: "/search", status: 200, body: searxngBody, check: func(r *http.Request) {
		if q := r.URL.Query(); (q.Get("q") != "go lang & co" && q.Get("q") != "go") || q.Get("format") != "json" {
			t.Errorf("query %v", q)
		}
	}}
	srv := f.serve(t)
	tool := WebSearch(WebSearchOptions{BaseURL: srv.URL + "/"})
	res := run(t, tool, `{"query":"go lang & co","count":3}`)
	want := "1. The Go Programming Language\n   https://go.dev/\n   Go is an open source programming language & more.\n" +
		"2. (untitled)\n   https://pkg.go.dev/\n" +
		"3. Third\n   https://example.com/3\n   three"
	if res.Output != want || res.Error != "" {
		t.Errorf("got\n%s\n(error %q)\nwant\n%s", res.Output, res.Error, want)
	}
	if fmt.Sprint(res.Sources) != "[https://go.dev/ https://pkg.go.dev/ https://example.com/3]" {
		t.Errorf("sources %q", res.Sources)
	}
	res = run(t, tool, `{"query":"go"}`) // count defaults to 5; three usable results
	if len(res.Sources) != 3 {
		t.Errorf("default count: %q", res.Sources)
	}
	res = run(t, tool, `{"query":"go","count":1}`)
	if len(res.Sources) != 1 {
		t.Errorf("count 1: %q", res.Sources)
	}
	if !tool.Spec().Idempotent {
		t.Error("web_search must be idempotent")
	}
}

func TestWebSearchBrave(t *testing.T) {
	t.Setenv("STEPWISE_TEST_BRAVE_KEY", "k-123")
	f := &fakeSearch{path: "/res/v1/web/search", status: 200, body: braveBody, check: func(r *http.Request) {
		if got := r.Header.Get("X-Subscription-Token"); got != "k-123" {
			t.Errorf("token %q", got)
		}
		if q := r.URL.Query(); q.Get("q") != "brave" || q.Get("count") != "2" {
			t.Errorf("query %v", q)
		}
	}}
	srv := f.serve(t)
	tool := WebSearch(WebSearchOptions{Backend: BackendBrave, BaseURL: srv.URL, APIKeyEnv: "STEPWISE_TEST_BRAVE_KEY"})
	res := run(t, tool, `{"query":"brave","count":2}`)
	want := "1. Brave one\n   https://one.example/\n   first \"hit\"\n2. Brave two\n   https://two.example/\n   second"
	if res.Output != want || res.Error != "" {
		t.Errorf("got\n%s\n(error %q)\nwant\n%s", res.Output, res.Error, want)
	}

	missing := WebSearch(WebSearchOptions{Backend: BackendBrave, BaseURL: srv.URL, APIKeyEnv: "STEPWISE_TEST_NO_SUCH_KEY"})
	wantError(t, run(t, missing, `{"query":"brave"}`), "environment variable STEPWISE_TEST_NO_SUCH_KEY is not set")
}

func TestWebSearchBackendFailures(t *testing.T) {
	t.Setenv("STEPWISE_TEST_BRAVE_KEY", "k")
	for _, backend := range []struct{ name, path string }{{BackendSearxNG, "/search"}, {BackendBrave, "/res/v1/web/search"}} {
		for _, tc := range []struct {
			status int
			body   string
			err    []string
		}{
			{500, `{"error":"overloaded"}`, []string{"the search backend answered 500 Internal Server Error", "overloaded"}},
			{429, `rate limited`, []string{"429 Too Many Requests", "rate limited"}},
			{200, `{"results": [ {"title": `, []string{"not the expected JSON"}},
			{200, `<html>not json</html>`, []string{"not the expected JSON"}},
			{200, `{"results":"nope","web":{"results":7}}`, []string{"not the expected JSON"}},
		} {
			f := &fakeSearch{path: backend.path, status: tc.status, body: tc.body}
			srv := f.serve(t)
			tool := WebSearch(WebSearchOptions{Backend: backend.name, BaseURL: srv.URL, APIKeyEnv: "STEPWISE_TEST_BRAVE_KEY"})
			wantError(t, run(t, tool, `{"query":"x"}`), tc.err...)
		}
		f := &fakeSearch{path: backend.path, status: 200, body: `{}`}
		tool := WebSearch(WebSearchOptions{Backend: backend.name, BaseURL: f.serve(t).URL, APIKeyEnv: "STEPWISE_TEST_BRAVE_KEY"})
		if res := run(t, tool, `{"query":"nothing"}`); res.Output != `no results for "nothing"` {
			t.Errorf("%s: empty answer gave %q %q", backend.name, res.Output, res.Error)
		}
	}
}

func TestWebSearchLimitsAndConfig(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	tool := WebSearch(WebSearchOptions{BaseURL: slow.URL, MaxResults: 3, Timeout: 200 * time.Millisecond})
	if _, err := checkCall(tool, `{"query":"x","count":4}`); err == nil {
		t.Error("the core accepted a count above MaxResults")
	}
	if _, err := checkCall(tool, `{"query":"x","count":0}`); err == nil {
		t.Error("the core accepted count 0")
	}
	wantError(t, runRaw(tool, `{"query":"x","count":4}`), "count must be between 1 and 3")
	wantError(t, run(t, tool, `{"query":"x"}`), "did not answer within 200ms")
	wantError(t, runRaw(WebSearch(WebSearchOptions{}), `{"query":"x"}`), "misconfigured", "needs base_url")
	wantError(t, runRaw(WebSearch(WebSearchOptions{Backend: "bing", BaseURL: slow.URL}), `{"query":"x"}`), "misconfigured", `"bing"`)
	wantError(t, runRaw(WebSearch(WebSearchOptions{BaseURL: "ftp://x"}), `{"query":"x"}`), "misconfigured", "not an http or https URL")
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	wantError(t, run(t, WebSearch(WebSearchOptions{BaseURL: dead.URL}), `{"query":"x"}`), "unreachable")
}
