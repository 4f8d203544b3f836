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
