package httpcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// credentialHeaders are the headers that carry an API key or a token,
// lower case: their values are redacted whatever they hold.
var credentialHeaders = []string{"authorization", "proxy-authorization", "x-api-key", "api-key"}

// capture is what Do keeps of the request of a rendered attempt.
type capture struct {
	req  *http.Request
	body []byte
}

type captureKey struct{}

// errRendered is what Do returns to the SDK for a request it kept: the
// attempt fails there, having sent nothing.
var errRendered = errors.New("the request was rendered, not sent")

// keep reads the body of req (a copy, when the SDK can make one).
func (c *capture) keep(req *http.Request) error {
	c.req = req
	if req.Body == nil {
		return errRendered
	}
	rc := req.Body
	if req.GetBody != nil {
		if copied, err := req.GetBody(); err == nil {
			req.Body.Close()
			rc = copied
		}
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("read the request body: %w", err)
	}
	c.body = b
	return errRendered
}

// Render runs attempt once under a context in which Do keeps the request
// the SDK hands it instead of sending it, and returns that request: the
// method, the URL, the headers (credentials redacted: the API key's
// value becomes "[redacted:NAME]", and a credential header that holds no
// key is "[redacted]") and the body, the bytes the SDK wrote. attempt
// is the function Complete gives Base.Complete for each attempt, so the
// body is what every attempt of Complete sends. An attempt that fails
// before it hands Do a request (one the SDK cannot build) returns its
// error.
func (b *Base) Render(attempt func(ctx context.Context) (core.ModelReply, error)) (shell.RenderedRequest, error) {
	c := &capture{}
	// Nothing is sent and nothing waits: the context only carries the
	// capture to Do.
	_, err := attempt(context.WithValue(context.Background(), captureKey{}, c))
	if c.req == nil {
		if err == nil || errors.Is(err, errRendered) {
			err = errors.New("the provider made no request")
		}
		return shell.RenderedRequest{}, err
	}
	if c.body == nil && c.req.Body != nil {
		// keep could not read the body: its error is the attempt's.
		return shell.RenderedRequest{}, err
	}
	var secrets []shell.Secret
	if b.key != "" {
		secrets = []shell.Secret{{Name: b.explain.KeyEnv, Value: b.key}}
	}
	x := shell.NewRedactor(secrets)
	out := shell.RenderedRequest{
		Provider: b.Endpoint.Provider,
		Method:   c.req.Method,
		URL:      x.String(c.req.URL.Redacted()),
		Headers:  map[string]string{},
		Body:     c.body,
	}
	for name, vals := range c.req.Header {
		v := x.String(strings.Join(vals, ", "))
		if slices.Contains(credentialHeaders, strings.ToLower(name)) && !strings.Contains(v, "[redacted:") {
			v = "[redacted]"
		}
		out.Headers[name] = v
	}
	if len(bytes.TrimSpace(out.Body)) == 0 {
		out.Body = nil
	}
	return out, nil
}

// capturing is the capture of a rendered attempt's context; nil when the
// attempt is sent.
func capturing(ctx context.Context) *capture {
	c, _ := ctx.Value(captureKey{}).(*capture)
	return c
}
