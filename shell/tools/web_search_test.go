package tools

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	res := run(t, tool, `{"query":"go lang & co","num_results":3}`)
	want := "[\n {\"title\": \"The Go Programming Language\", \"url\": \"https://go.dev/\", \"snippet\": \"Go is an open source programming language & more.\"},\n" +
		" {\"title\": \"(untitled)\", \"url\": \"https://pkg.go.dev/\"},\n" +
		" {\"title\": \"Third\", \"url\": \"https://example.com/3\", \"snippet\": \"three\"}\n]"
	if res.Output != want || res.Error != "" {
		t.Errorf("got\n%s\n(error %q)\nwant\n%s", res.Output, res.Error, want)
	}
	if fmt.Sprint(res.Sources) != "[https://go.dev/ https://pkg.go.dev/ https://example.com/3]" {
		t.Errorf("sources %q", res.Sources)
	}
	res = run(t, tool, `{"query":"go"}`) // num_results defaults to 5; three usable results
	if len(res.Sources) != 3 {
		t.Errorf("default count: %q", res.Sources)
	}
	res = run(t, tool, `{"query":"go","num_results":1}`)
	if len(res.Sources) != 1 {
		t.Errorf("num_results 1: %q", res.Sources)
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
	res := run(t, tool, `{"query":"brave","max_results":2}`)
	want := "[\n {\"title\": \"Brave one\", \"url\": \"https://one.example/\", \"snippet\": \"first \\\"hit\\\"\"},\n {\"title\": \"Brave two\", \"url\": \"https://two.example/\", \"snippet\": \"second\"}\n]"
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
	for _, name := range []string{"num_results", "max_results"} {
		if _, err := checkCall(tool, `{"query":"x","`+name+`":4}`); err == nil {
			t.Errorf("the core accepted a %s above MaxResults", name)
		}
		if _, err := checkCall(tool, `{"query":"x","`+name+`":0}`); err == nil {
			t.Errorf("the core accepted %s 0", name)
		}
		wantError(t, runRaw(tool, `{"query":"x","`+name+`":4}`), "num_results must be between 1 and 3")
	}
	wantError(t, run(t, tool, `{"query":"x"}`), "did not answer within 200ms")
	wantError(t, runRaw(WebSearch(WebSearchOptions{}), `{"query":"x"}`), "misconfigured", "needs base_url")
	wantError(t, runRaw(WebSearch(WebSearchOptions{Backend: "bing", BaseURL: slow.URL}), `{"query":"x"}`), "misconfigured", `"bing"`)
	wantError(t, runRaw(WebSearch(WebSearchOptions{BaseURL: "ftp://x"}), `{"query":"x"}`), "misconfigured", "not an http or https URL")
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	wantError(t, run(t, WebSearch(WebSearchOptions{BaseURL: dead.URL}), `{"query":"x"}`), "unreachable")
}

// TestWebSearchNumResultsAndMaxResults: num_results (default 5) and its
// other name max_results are both in the schema; either sets the count,
// both must agree, and the core injects neither (else max_results alone
// would meet a default num_results).
func TestWebSearchNumResultsAndMaxResults(t *testing.T) {
	t.Parallel()
	body := `{"results":[` + strings.TrimSuffix(strings.Repeat(`{"title":"t","url":"https://example.com/x","content":"c"},`, 8), ",") + `]}`
	f := &fakeSearch{path: "/search", status: 200, body: body}
	tool := WebSearch(WebSearchOptions{BaseURL: f.serve(t).URL})
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(tool.Spec().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	num, max := schema.Properties["num_results"], schema.Properties["max_results"]
	if num["type"] != "integer" || num["maximum"] != float64(DefaultSearchMaxResult) || !strings.Contains(num["description"].(string), "default 5") ||
		max["type"] != "integer" || !strings.Contains(max["description"].(string), "num_results") || num["default"] != nil || fmt.Sprint(schema.Required) != "[query]" {
		t.Fatalf("schema %s", tool.Spec().Parameters)
	}
	if c := validCall(t, tool, `{"query":"x","max_results":2}`); string(c.Args) != `{"max_results":2,"query":"x"}` {
		t.Fatalf("the core changed the arguments to %s", c.Args)
	}
	for _, tc := range []struct {
		args string
		n    int
	}{
		{`{"query":"x"}`, 5},
		{`{"query":"x","num_results":3}`, 3},
		{`{"query":"x","max_results":2}`, 2},
		{`{"query":"x","num_results":4,"max_results":4}`, 4},
	} {
		if res := run(t, tool, tc.args); len(res.Sources) != tc.n || res.Error != "" {
			t.Errorf("%s: %d results (%q), want %d", tc.args, len(res.Sources), res.Error, tc.n)
		}
	}
	wantError(t, run(t, tool, `{"query":"x","num_results":3,"max_results":6}`), "num_results (3) and max_results (6) differ")
	// A call validated before num_results existed still runs.
	if res := runRaw(tool, `{"query":"x","count":1}`); len(res.Sources) != 1 {
		t.Errorf("count 1: %+v", res)
	}
	wantError(t, runRaw(tool, `{"query":"x","max_results":2,"count":3}`), "max_results (2) and count (3) differ")
}
