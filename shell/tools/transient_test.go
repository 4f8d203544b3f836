package tools

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestTransientFailuresAreMarked: failures that may go away on their own
// (a refused connection, a timeout, a 429 or 5xx, a command's EX_TEMPFAIL)
// are marked Transient, so an idempotent tool is retried and the run
// stalls instead of failing; the rest are not.
func TestTransientFailuresAreMarked(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, `{"results": []}`)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	get := HTTPGet(HTTPGetOptions{AllowHosts: []string{"127.0.0.1"}, Timeout: 2 * time.Second})
	search := WebSearch(WebSearchOptions{BaseURL: srv.URL, Timeout: 2 * time.Second})
	down := WebSearch(WebSearchOptions{BaseURL: closed.URL, Timeout: 2 * time.Second})
	urlOf := func(u string) string { b, _ := json.Marshal(map[string]string{"url": u}); return string(b) }
	for _, c := range []struct {
		name      string
		status    int
		run       func() (transient, failed bool)
		transient bool
	}{
		{"http_get: refused connection", 200, func() (bool, bool) { r := run(t, get, urlOf(closed.URL)); return r.Transient, r.Failed() }, true},
		{"http_get: 503", 503, func() (bool, bool) { r := run(t, get, urlOf(srv.URL)); return r.Transient, r.Failed() }, true},
		{"http_get: 429", 429, func() (bool, bool) { r := run(t, get, urlOf(srv.URL)); return r.Transient, r.Failed() }, true},
		{"http_get: 404", 404, func() (bool, bool) { r := run(t, get, urlOf(srv.URL)); return r.Transient, r.Failed() }, false},
		{"web_search: unreachable", 200, func() (bool, bool) { r := run(t, down, `{"query": "x"}`); return r.Transient, r.Failed() }, true},
		{"web_search: 502", 502, func() (bool, bool) { r := run(t, search, `{"query": "x"}`); return r.Transient, r.Failed() }, true},
		{"web_search: 403", 403, func() (bool, bool) { r := run(t, search, `{"query": "x"}`); return r.Transient, r.Failed() }, false},
	} {
		status = c.status
		transient, failed := c.run()
		if !failed || transient != c.transient {
			t.Errorf("%s: failed %v, transient %v, want transient %v", c.name, failed, transient, c.transient)
		}
	}
	for _, c := range []struct {
		code      string
		transient bool
	}{{"75", true}, {"1", false}} {
		tool, err := Command(CommandSpec{Name: "flaky", Argv: []string{"sh", "-c", "exit " + c.code}})
		if err != nil {
			t.Fatal(err)
		}
		if r := run(t, tool, `{}`); !r.Failed() || r.Transient != c.transient {
			t.Errorf("exit %s: %+v, want transient %v", c.code, r, c.transient)
		}
	}
}
