package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults of HTTPGetOptions.
const (
	DefaultHTTPMaxBytes = 256 << 10
	DefaultHTTPTimeout  = 15 * time.Second
	maxRedirects        = 5
	errorBodyBytes      = 1 << 10 // of a failed response's body, in the error
)

// HTTPGetOptions configures http_get. Zero values mean the defaults.
type HTTPGetOptions struct {
	// AllowHosts lists the hosts that may be fetched: "example.com" (that
	// host, any port), "*.example.com" (its subdomains, not itself), with an
	// optional ":port" to allow that port only. Empty allows nothing.
	AllowHosts []string
	// MaxBytes is how much of a body is returned (0: DefaultHTTPMaxBytes).
	MaxBytes int
	// Timeout bounds the whole fetch, redirects included
	// (0: DefaultHTTPTimeout).
	Timeout time.Duration
	// Transport makes the requests (nil: a clone of http.DefaultTransport).
	Transport http.RoundTripper
}

func (o HTTPGetOptions) withDefaults() HTTPGetOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultHTTPMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultHTTPTimeout
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return o
}

func (o HTTPGetOptions) validate() error {
	if _, err := parseHostList(o.AllowHosts); err != nil {
		return fmt.Errorf("http_get: %w", err)
	}
	if len(o.AllowHosts) == 0 {
		return errors.New("http_get: allow_hosts is empty, so nothing could be fetched")
	}
	if o.MaxBytes < 0 || o.Timeout < 0 {
		return errors.New("http_get: limits must not be negative")
	}
	return nil
}

type httpGet struct {
	opts   HTTPGetOptions
	hosts  hostList
	err    error // a configuration problem, reported by every call
	client *http.Client
}

// HTTPGet returns the http_get tool: it fetches an http or https URL whose
// host is on the allow-list, following at most 5 redirects, each to an
// allowed host, and returns the status, content type and body text (a
// binary body is described, not shown). A status of 400 or more is an
// error. Sources holds the final URL. Idempotent.
func HTTPGet(opts HTTPGetOptions) shell.Tool {
	t := &httpGet{opts: opts.withDefaults()}
	t.err = opts.validate()
	t.hosts, _ = parseHostList(opts.AllowHosts) // its error is in t.err
	t.client = &http.Client{
		Transport: t.opts.Transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("%w: more than %d redirects", errRefusedRedirect, maxRedirects)
			}
			if err := t.hosts.check(req.URL); err != nil {
				return fmt.Errorf("%w: redirected to %s: %v", errRefusedRedirect, req.URL.Redacted(), err)
			}
			return nil
		},
	}
	return t
}

func (t *httpGet) Spec() core.Tool {
	return core.Tool{
		Name: "http_get",
		Description: fmt.Sprintf("Fetch a web page or API response with HTTP GET and return its status, content type and body text. "+
			"Only these hosts may be fetched: %s. Bodies beyond %d bytes are cut.", strings.Join(t.opts.AllowHosts, ", "), t.opts.MaxBytes),
		Parameters: objectSchema([]prop{
			{"url", map[string]any{"type": "string", "minLength": 1, "description": "absolute http or https URL"}},
		}, "url"),
		Idempotent: true,
	}
}

type httpGetArgs struct {
	URL string `json:"url"`
}

func (t *httpGet) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	if t.err != nil {
		return failf(call, "misconfigured: %v", t.err)
	}
	var a httpGetArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return failf(call, "not a URL: %v", err)
	}
	if err := t.hosts.check(u); err != nil {
		return failf(call, "%v; allowed: %s", err, strings.Join(t.opts.AllowHosts, ", "))
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return failf(call, "%v", err)
	}
	req.Header.Set("User-Agent", "stepwise-http_get/1")
	resp, err := t.client.Do(req)
	if err != nil {
		return t.fetchFailed(parent, ctx, call, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.opts.MaxBytes)+1))
	if err != nil {
		return t.fetchFailed(parent, ctx, call, err)
	}
	final := resp.Request.URL.Redacted()
	cut := len(body) > t.opts.MaxBytes
	if cut {
		body = body[:t.opts.MaxBytes]
	}
	ctype := resp.Header.Get("Content-Type")
	if resp.StatusCode >= 400 {
		return core.ToolResult{CallID: call.ID, Error: fmt.Sprintf("http_get: %s answered %s: %s", final, resp.Status,
			tail(bodyText(body, ctype, cut), errorBodyBytes)), Sources: []string{final}, Transient: transientStatus(resp.StatusCode)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s\n", resp.Status)
	if final != u.Redacted() {
		fmt.Fprintf(&b, "url: %s\n", final)
	}
	fmt.Fprintf(&b, "content-type: %s\n\n", ctype)
	b.WriteString(bodyText(body, ctype, cut))
	if cut {
		if resp.ContentLength > 0 {
			fmt.Fprintf(&b, "\n[... cut: %d of %d bytes shown]", len(body), resp.ContentLength)
		} else {
			fmt.Fprintf(&b, "\n[... cut: the first %d bytes shown]", len(body))
		}
	}
	return core.ToolResult{CallID: call.ID, Output: b.String(), Sources: []string{final}}
}

// fetchFailed explains a transport error: the caller's context (parent),
// the time limit (ctx), or the error itself (a refused redirect, a refused
// connection).
func (t *httpGet) fetchFailed(parent, ctx context.Context, call core.ToolCall, err error) core.ToolResult {
	switch {
	case parent.Err() != nil:
		return interrupted(call, parent.Err())
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return transientf(call, "timed out after %s", t.opts.Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, errRefusedRedirect) {
		return failf(call, "%v", err)
	}
	return transientf(call, "%v", err)
}

// errRefusedRedirect marks a redirect http_get refused (too many, or to a
// host off the allow-list): it will be refused again, so it is not
// transient.
var errRefusedRedirect = errors.New("refused redirect")

// transientStatus reports whether an HTTP status may go away on its own
// (a timeout, a rate limit, a server error).
func transientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// bodyText renders a body as text, or describes it when it is not text.
func bodyText(body []byte, ctype string, cut bool) string {
	if len(body) == 0 {
		return "(empty body)"
	}
	if !isText(body, ctype) {
		return fmt.Sprintf("(binary body, %d bytes, not shown)", len(body))
	}
	return toText(body, cut)
}

// isText reports whether a body is text: by its declared media type, or
// when there is none, by sniffing.
func isText(body []byte, ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if ctype == "" || err != nil {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		strings.Contains(mt, "json"), strings.Contains(mt, "xml"), strings.Contains(mt, "javascript"),
		mt == "application/x-www-form-urlencoded", mt == "application/yaml", mt == "application/toml":
		return true
	}
	return false
}
