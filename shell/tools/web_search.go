package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// The web_search backends.
const (
	BackendSearxNG = "searxng"
	BackendBrave   = "brave"
)

// Defaults of WebSearchOptions.
const (
	DefaultBraveBaseURL    = "https://api.search.brave.com"
	DefaultBraveAPIKeyEnv  = "BRAVE_API_KEY"
	DefaultSearchMaxResult = 10
	DefaultSearchCount     = 5
	DefaultSearchTimeout   = 15 * time.Second
	maxSearchResponse      = 4 << 20
	maxSnippetRunes        = 400
)

// WebSearchOptions configures web_search. Zero values mean the defaults.
type WebSearchOptions struct {
	// Backend is BackendSearxNG (the default) or BackendBrave.
	Backend string
	// BaseURL is the server: a SearxNG instance (required for searxng;
	// GET {BaseURL}/search?q=...&format=json), or the Brave Search API
	// (default DefaultBraveBaseURL; GET {BaseURL}/res/v1/web/search).
	BaseURL string
	// APIKeyEnv names the environment variable holding the Brave API key
	// (default DefaultBraveAPIKeyEnv); it is read at call time.
	APIKeyEnv string
	// MaxResults caps the number of results the model may ask for
	// (num_results; 0: DefaultSearchMaxResult). The number defaults to
	// DefaultSearchCount, or MaxResults when that is smaller.
	MaxResults int
	// Timeout bounds one search (0: DefaultSearchTimeout).
	Timeout time.Duration
	// Transport makes the requests (nil: a clone of http.DefaultTransport).
	Transport http.RoundTripper
}

func (o WebSearchOptions) withDefaults() WebSearchOptions {
	if o.Backend == "" {
		o.Backend = BackendSearxNG
	}
	if o.Backend == BackendBrave {
		if o.BaseURL == "" {
			o.BaseURL = DefaultBraveBaseURL
		}
		if o.APIKeyEnv == "" {
			o.APIKeyEnv = DefaultBraveAPIKeyEnv
		}
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultSearchMaxResult
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultSearchTimeout
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return o
}

func (o WebSearchOptions) validate() error {
	switch o.Backend {
	case "", BackendSearxNG:
		if o.BaseURL == "" {
			return errors.New("web_search: the searxng backend needs base_url")
		}
	case BackendBrave:
	default:
		return fmt.Errorf("web_search: backend %q is not one of searxng, brave", o.Backend)
	}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("web_search: base_url %q is not an http or https URL", o.BaseURL)
		}
	}
	if o.MaxResults < 0 || o.Timeout < 0 {
		return errors.New("web_search: limits must not be negative")
	}
	return nil
}

type webSearch struct {
	opts   WebSearchOptions
	err    error // a configuration problem, reported by every call
	client *http.Client
}

// WebSearch returns the web_search tool: it asks the configured backend
// and returns a JSON list of results ({"title", "url", "snippet"}, one a
// line), which summaries shorten ("Web search results: a | b | c" under
// a summary, its declared SummaryLabel). Sources holds the URLs. An error status or a malformed answer from the backend is an error
// the model sees. Idempotent.
//
// Its arguments: query, and num_results (how many results; default
// DefaultSearchCount, at most MaxResults), also accepted as max_results
// (the name EDISON's design uses); both given and different is an error
// naming both. (count, the name before, is still taken from calls
// validated by an earlier schema.)
func WebSearch(opts WebSearchOptions) shell.Tool {
	t := &webSearch{opts: opts.withDefaults(), err: opts.validate()}
	t.client = &http.Client{Transport: t.opts.Transport}
	return t
}

func (t *webSearch) Spec() core.Tool {
	return core.Tool{
		Name:        "web_search",
		Description: "Search the web. Returns a JSON list of results, each a title, url and snippet; fetch a page for more.",
		Parameters: objectSchema([]prop{
			{"query", map[string]any{"type": "string", "minLength": 1, "description": "the search terms"}},
			{"num_results", map[string]any{"type": "integer", "minimum": 1, "maximum": t.opts.MaxResults,
				"description": fmt.Sprintf("how many results to return (default %d)", t.defaultCount())}},
			{"max_results", map[string]any{"type": "integer", "minimum": 1, "maximum": t.opts.MaxResults,
				"description": "another name for num_results; give one of the two"}},
		}, "query"),
		Idempotent:   true,
		SummaryLabel: "Web search results",
	}
}

// defaultCount is how many results a call without num_results gets.
func (t *webSearch) defaultCount() int { return min(DefaultSearchCount, t.opts.MaxResults) }

type webSearchArgs struct {
	Query      string `json:"query"`
	NumResults *int   `json:"num_results"`
	MaxResults *int   `json:"max_results"`
	// Count is num_results' name before; only calls validated by an
	// earlier schema (a run paused across an upgrade) carry it.
	Count *int `json:"count"`

	n int // the number asked for, resolved
}

// count resolves how many results the call asks for from its names for
// it, or an error naming the names that disagree.
func (a *webSearchArgs) count(def int) error {
	var given []string
	n := 0
	for _, f := range []struct {
		name string
		v    *int
	}{{"num_results", a.NumResults}, {"max_results", a.MaxResults}, {"count", a.Count}} {
		if f.v == nil {
			continue
		}
		if len(given) > 0 && *f.v != n {
			return fmt.Errorf("%s (%d) and %s (%d) differ; give one of them", given[0], n, f.name, *f.v)
		}
		given = append(given, f.name)
		n = *f.v
	}
	if len(given) == 0 {
		n = def
	}
	a.n = n
	return nil
}

// searchHit is one result, whichever backend gave it.
type searchHit struct {
	Title, URL, Snippet string
}

func (t *webSearch) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	if t.err != nil {
		return failf(call, "misconfigured: %v", t.err)
	}
	var a webSearchArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	a.Query = strings.TrimSpace(a.Query)
	if a.Query == "" {
		return failf(call, "the query is empty")
	}
	if err := a.count(t.defaultCount()); err != nil {
		return failf(call, "%v", err)
	}
	if a.n < 1 || a.n > t.opts.MaxResults {
		return failf(call, "num_results must be between 1 and %d", t.opts.MaxResults)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()

	var hits []searchHit
	var err error
	switch t.opts.Backend {
	case BackendBrave:
		hits, err = t.brave(ctx, a)
	default:
		hits, err = t.searxng(ctx, a)
	}
	switch {
	case parent.Err() != nil:
		return interrupted(call, parent.Err())
	case ctx.Err() != nil:
		return transientf(call, "the search backend did not answer within %s", t.opts.Timeout)
	case errors.Is(err, errBackendDown):
		return transientf(call, "%v", err)
	case err != nil:
		return failf(call, "%v", err)
	}
	if len(hits) > a.n {
		hits = hits[:a.n]
	}
	if len(hits) == 0 {
		return core.ToolResult{CallID: call.ID, Output: fmt.Sprintf("no results for %q", a.Query)}
	}
	sources := make([]string, 0, len(hits))
	for _, h := range hits {
		sources = append(sources, h.URL)
	}
	return core.ToolResult{CallID: call.ID, Output: hitsJSON(hits), Sources: sources}
}

// hitsJSON writes results as a JSON array, one object a line, members in
// the order title, url, snippet (an empty snippet left out), no HTML
// escaping: structured, so that summaries read it as a list (the strict
// JSON loop's "Web search results: a | b | c") and citations its URLs.
func hitsJSON(hits []searchHit) string {
	var b strings.Builder
	b.WriteString("[")
	for i, h := range hits {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n {\"title\": ")
		b.WriteString(jsonText(h.Title))
		b.WriteString(", \"url\": ")
		b.WriteString(jsonText(h.URL))
		if h.Snippet != "" {
			b.WriteString(", \"snippet\": ")
			b.WriteString(jsonText(h.Snippet))
		}
		b.WriteString("}")
	}
	b.WriteString("\n]")
	return b.String()
}

// jsonText is s as a JSON string, without HTML escaping.
func jsonText(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// searxng asks a SearxNG instance: GET /search?q=...&format=json.
func (t *webSearch) searxng(ctx context.Context, a webSearchArgs) ([]searchHit, error) {
	q := url.Values{"q": {a.Query}, "format": {"json"}}
	var body struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := t.getJSON(ctx, t.opts.BaseURL+"/search?"+q.Encode(), nil, &body); err != nil {
		return nil, err
	}
	var hits []searchHit
	for _, r := range body.Results {
		hits = appendHit(hits, r.Title, r.URL, r.Content)
	}
	return hits, nil
}

// brave asks the Brave Search API: GET /res/v1/web/search?q=...&count=N
// with the key in X-Subscription-Token.
func (t *webSearch) brave(ctx context.Context, a webSearchArgs) ([]searchHit, error) {
	key := os.Getenv(t.opts.APIKeyEnv)
	if key == "" {
		return nil, fmt.Errorf("the Brave API key is missing: environment variable %s is not set", t.opts.APIKeyEnv)
	}
	q := url.Values{"q": {a.Query}, "count": {fmt.Sprint(a.n)}}
	var body struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	hdr := http.Header{"X-Subscription-Token": {key}}
	if err := t.getJSON(ctx, t.opts.BaseURL+"/res/v1/web/search?"+q.Encode(), hdr, &body); err != nil {
		return nil, err
	}
	var hits []searchHit
	for _, r := range body.Web.Results {
		hits = appendHit(hits, r.Title, r.URL, r.Description)
	}
	return hits, nil
}

// getJSON fetches u and decodes its JSON body into v. A non-2xx status and
// a body that is not the expected JSON are errors.
func (t *webSearch) getJSON(ctx context.Context, u string, hdr http.Header, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "stepwise-web_search/1")
	resp, err := t.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: unreachable: %v", errBackendDown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchResponse))
	if err != nil {
		return fmt.Errorf("reading the search backend's answer: %v", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("the search backend answered %s: %s", resp.Status, tail(toText(body, false), errorBodyBytes))
		if transientStatus(resp.StatusCode) {
			err = fmt.Errorf("%w: %w", errBackendDown, err)
		}
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the search backend's answer is not the expected JSON: %v", err)
	}
	return nil
}

// errBackendDown marks a search backend failure that may go away on its
// own (unreachable, a rate limit, a server error).
var errBackendDown = errors.New("the search backend is down")

var htmlTag = regexp.MustCompile(`<[^>]*>`)

// appendHit adds a result with a URL, its title and snippet made plain text
// (tags stripped, entities decoded, whitespace collapsed, snippet capped).
func appendHit(hits []searchHit, title, u, snippet string) []searchHit {
	if strings.TrimSpace(u) == "" {
		return hits
	}
	plain := func(s string) string {
		return strings.Join(strings.Fields(html.UnescapeString(htmlTag.ReplaceAllString(s, ""))), " ")
	}
	title, snippet = plain(title), plain(snippet)
	if title == "" {
		title = "(untitled)"
	}
	if r := []rune(snippet); len(r) > maxSnippetRunes {
		snippet = string(r[:maxSnippetRunes]) + "…"
	}
	return append(hits, searchHit{Title: title, URL: strings.TrimSpace(u), Snippet: snippet})
}
