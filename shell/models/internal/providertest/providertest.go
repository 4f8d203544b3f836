// Package providertest holds what the model providers' tests share: a
// recorder of what a provider reports during a call, and helpers to
// write fake streams and read the requests a fake server got. Only tests
// import it.
package providertest

import (
	"encoding/json"
	"strings"
	"testing"

	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/shell"
)

// Recorder collects what a provider reports during a call.
type Recorder struct {
	Deltas  []shell.ModelDelta
	Retries []shell.ModelRetry
}

// Request is req with its OnDelta and OnRetry recorded by r.
func (r *Recorder) Request(req shell.ModelRequest) shell.ModelRequest {
	req.OnDelta = func(d shell.ModelDelta) { r.Deltas = append(r.Deltas, d) }
	req.OnRetry = func(rt shell.ModelRetry) { r.Retries = append(r.Retries, rt) }
	return req
}

// Spelled joins the text of the deltas of one kind.
func (r *Recorder) Spelled(kind shell.DeltaKind) string {
	var b strings.Builder
	for _, d := range r.Deltas {
		if d.Kind == kind {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// Body decodes a request's JSON body.
func Body(t *testing.T, r mt.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("the request is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// CompactJSON is v as compact JSON.
func CompactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Split cuts s into pieces of n bytes (the last shorter), as a stream
// would send it.
func Split(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// JSONString is s as a JSON string.
func JSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// RendersAsSent checks that p renders req (shell.RequestRenderer) as the
// request sent got, the request srv received when p's Complete was called
// with req: the same method and URL, the body byte for byte, and each
// header rendered as it arrived, except the credentials, which are
// redacted (key, the API key, appears nowhere in what is rendered).
func RendersAsSent(t *testing.T, p shell.ModelProvider, req shell.ModelRequest, srv *mt.Server, got mt.Request, key string) shell.RenderedRequest {
	t.Helper()
	r, ok := p.(shell.RequestRenderer)
	if !ok {
		t.Fatalf("%T is not a shell.RequestRenderer", p)
	}
	out, err := r.RenderRequest(req)
	if err != nil {
		t.Fatalf("RenderRequest: %v", err)
	}
	if string(out.Body) != string(got.Body) {
		t.Errorf("rendered body:\n%s\nsent:\n%s", out.Body, got.Body)
	}
	url := srv.URL + got.Path
	if got.Query != "" {
		url += "?" + got.Query
	}
	if out.Method != got.Method || out.URL != url {
		t.Errorf("rendered %s %s, sent %s %s", out.Method, out.URL, got.Method, url)
	}
	for name, v := range out.Headers {
		sent := strings.Join(got.Header.Values(name), ", ")
		switch lower := strings.ToLower(name); {
		case lower == "authorization" || lower == "x-api-key" || lower == "api-key":
			if !strings.Contains(v, "[redacted") || (key != "" && !strings.Contains(sent, key)) {
				t.Errorf("header %s: rendered %q, sent %q: want the key redacted", name, v, sent)
			}
		case v != sent:
			t.Errorf("header %s: rendered %q, sent %q", name, v, sent)
		}
	}
	if key != "" && strings.Contains(CompactJSON(out), key) {
		t.Errorf("the rendered request holds the API key: %s", CompactJSON(out))
	}
	return out
}
