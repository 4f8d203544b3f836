package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func httpServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "hello web")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("y", 1000))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			http.Redirect(w, r, "/text", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://forbidden.example/", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func urlArgs(u string) string { return `{"url":` + jsonString(u) + `}` }

func TestHTTPGet(t *testing.T) {
	t.Parallel()
	srv := httpServer(t)
	tool := HTTPGet(HTTPGetOptions{AllowHosts: []string{"127.0.0.1"}, MaxBytes: 100, Timeout: 300 * time.Millisecond})

	res := run(t, tool, urlArgs(srv.URL+"/text"))
	if want := "status: 200 OK\ncontent-type: text/plain; charset=utf-8\n\nhello web"; res.Output != want || res.Error != "" {
		t.Errorf("got %q (error %q), want %q", res.Output, res.Error, want)
	}
	if len(res.Sources) != 1 || res.Sources[0] != srv.URL+"/text" {
		t.Errorf("sources %q", res.Sources)
	}

	wantOutput(t, run(t, tool, urlArgs(srv.URL+"/json")), "content-type: application/json", `{"ok":true}`)
	wantOutput(t, run(t, tool, urlArgs(srv.URL+"/png")), "(binary body, 10 bytes, not shown)")
	wantOutput(t, run(t, tool, urlArgs(srv.URL+"/big")), strings.Repeat("y", 100)+"\n[... cut: 100 of 1000 bytes shown]")

	res = run(t, tool, urlArgs(srv.URL+"/hop/4")) // five redirects
	wantOutput(t, res, "url: "+srv.URL+"/text", "hello web")
	if len(res.Sources) != 1 || res.Sources[0] != srv.URL+"/text" {
		t.Errorf("sources after redirects %q", res.Sources)
	}
	wantError(t, run(t, tool, urlArgs(srv.URL+"/hop/5")), "more than 5 redirects")
	wantError(t, run(t, tool, urlArgs(srv.URL+"/away")), "redirected to http://forbidden.example/", "not on the allow-list")

	res = run(t, tool, urlArgs(srv.URL+"/missing"))
	wantError(t, res, "404 Not Found", "no such page")

	start := time.Now()
	wantError(t, run(t, tool, urlArgs(srv.URL+"/slow")), "timed out after 300ms")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s", d)
	}
	if !tool.Spec().Idempotent {
		t.Error("http_get must be idempotent")
	}
}

func TestHTTPGetRefuses(t *testing.T) {
	t.Parallel()
	srv := httpServer(t)
	u, _ := url.Parse(srv.URL)
	tool := HTTPGet(HTTPGetOptions{AllowHosts: []string{"127.0.0.1:1", "*.example.com"}})
	for _, tc := range []struct{ url, err string }{
		{srv.URL + "/text", "is not on the allow-list; allowed: 127.0.0.1:1, *.example.com"}, // wrong port
		{"http://localhost:" + u.Port() + "/text", "not on the allow-list"},
		{"http://example.com/", "not on the allow-list"},
		{"ftp://a.example.com/x", `only http and https URLs can be fetched, not "ftp"`},
		{"file:///etc/passwd", "only http and https"},
		{"/relative", "only http and https"},
		{"http:///nohost", "has no host"},
		{"http://a.example.com:bad/", "not a URL"},
	} {
		wantError(t, run(t, tool, urlArgs(tc.url)), tc.err)
	}
	wantError(t, runRaw(HTTPGet(HTTPGetOptions{}), urlArgs(srv.URL)), "misconfigured", "allow_hosts is empty")
	wantError(t, runRaw(HTTPGet(HTTPGetOptions{AllowHosts: []string{"a/b"}}), urlArgs(srv.URL)), "misconfigured", `"a/b"`)
}

func TestHostRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule, url string
		want      bool
	}{
		{"example.com", "https://example.com/x", true},
		{"example.com", "http://EXAMPLE.com:8080/", true},
		{"example.com", "https://example.com./", true},
		{"example.com", "https://www.example.com/", false},
		{"example.com", "https://evilexample.com/", false},
		{"*.example.com", "https://www.example.com/", true},
		{"*.example.com", "https://a.b.example.com/", true},
		{"*.example.com", "https://example.com/", false},
		{"*.example.com", "https://wwwexample.com/", false},
		{"example.com:8080", "http://example.com:8080/", true},
		{"example.com:8080", "http://example.com/", false},
		{"example.com:443", "https://example.com/", true},
		{"example.com:443", "http://example.com/", false},
		{"*.example.com:443", "https://api.example.com/", true},
		{"127.0.0.1", "http://127.0.0.1:9999/", true},
		{"[::1]:8080", "http://[::1]:8080/", true},
		{"::1", "http://[::1]:1/", true},
		{"[::1]", "http://[::2]/", false},
		{"Example.COM", "https://example.com/", true},
	} {
		r, err := parseHostRule(tc.rule)
		if err != nil {
			t.Errorf("%s: %v", tc.rule, err)
			continue
		}
		u, _ := url.Parse(tc.url)
		if got := r.matches(u); got != tc.want {
			t.Errorf("%s matches %s = %v, want %v", tc.rule, tc.url, got, tc.want)
		}
	}
	for _, bad := range []string{"", "*", "*.", "http://example.com", "a b", "example.com:x", "*.*.example.com"} {
		if _, err := parseHostRule(bad); err == nil {
			t.Errorf("parseHostRule(%q) accepted", bad)
		}
	}
}

func TestHTTPGetInterrupted(t *testing.T) {
	t.Parallel()
	srv := httpServer(t)
	tool := HTTPGet(HTTPGetOptions{AllowHosts: []string{"127.0.0.1"}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	wantError(t, runWith(t, ctx, tool, urlArgs(srv.URL+"/slow")), "interrupted")
}
