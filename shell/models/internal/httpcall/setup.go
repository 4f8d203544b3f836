package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Setup is what every HTTP provider's New starts from: the options all of
// them take, and how the provider words and vets what it gets.
type Setup struct {
	// Name is the provider's name; New's errors start with it.
	Name string
	// Model, BaseURL (DefaultBaseURL when empty), APIKeyEnv, Timeout,
	// Retry (shell.DefaultModelRetry's where zero) and MaxTokens are the
	// provider's options of those names.
	Model, BaseURL, DefaultBaseURL, APIKeyEnv string
	Timeout                                   time.Duration
	Retry                                     shell.RetryPolicy
	MaxTokens                                 int
	// Problems are what the provider found wrong with its own options;
	// they are reported with the common ones.
	Problems []string
	// Check vets a 2xx reply that is not a stream (Options.Check).
	Check func(body []byte) error
	// HTTPClient, Sleep, Rand and Now are the client's (Options).
	HTTPClient *http.Client
	Sleep      func(ctx context.Context, d time.Duration) error
	Rand       func() float64
	Now        func() time.Time
	// Explain words the provider's failures (Explain); Who is set by
	// Open.
	Explain Provider
	// RenderOnly opens a Base that renders requests (Render) and sends
	// none: the API key's variable is not read, its marker
	// "[redacted:NAME]" stands in for the key, and Complete fails
	// permanently. A tool that shows what a run sent needs no key.
	RenderOnly bool
}

// Base is the part every HTTP provider holds: its endpoint, its client,
// and how its failures are explained.
type Base struct {
	// Endpoint names the provider's model and endpoint (BaseURL filled
	// in); Retry is the policy its client follows, defaults filled in.
	Endpoint Endpoint
	Retry    shell.RetryPolicy
	// HTTP makes the attempts: the SDK's HTTP client.
	HTTP    *Client
	explain Provider
	// key is the API key (its marker when renderOnly), for Render to
	// redact.
	key        string
	renderOnly bool
}

// Open checks s, reads the API key from the variable s.APIKeyEnv names
// ("" when it names none; its marker with RenderOnly) and makes the
// client. A named variable that is unset or empty is an error (unless
// RenderOnly); so are a missing model, a base URL that is
// not http(s), a negative timeout or max tokens, an invalid retry policy
// and s.Problems, all reported at once.
func Open(s Setup) (*Base, string, error) {
	errs := s.Problems
	if strings.TrimSpace(s.Model) == "" {
		errs = append([]string{"model is empty"}, errs...)
	}
	if s.BaseURL == "" {
		s.BaseURL = s.DefaultBaseURL
	}
	if u, err := url.Parse(s.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Sprintf("base URL %q is not an http or https URL", s.BaseURL))
	}
	if s.Timeout < 0 {
		errs = append(errs, "timeout is negative")
	}
	if s.MaxTokens < 0 {
		errs = append(errs, "max tokens is negative")
	}
	s.Retry = s.Retry.WithDefaults(shell.DefaultModelRetry)
	if err := s.Retry.Validate(); err != nil {
		errs = append(errs, "retry: "+strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if len(errs) > 0 {
		return nil, "", fmt.Errorf("%s: %s", s.Name, strings.Join(errs, "; "))
	}
	key := ""
	switch {
	case s.APIKeyEnv != "" && s.RenderOnly:
		key = "[redacted:" + s.APIKeyEnv + "]"
	case s.APIKeyEnv != "":
		if key = os.Getenv(s.APIKeyEnv); key == "" {
			return nil, "", fmt.Errorf("%s: the variable %s, named to hold the API key, is unset or empty", s.Name, s.APIKeyEnv)
		}
	}
	b := &Base{
		Endpoint: Endpoint{Provider: s.Name, Model: s.Model, BaseURL: s.BaseURL},
		Retry:    s.Retry,
		HTTP: New(Options{
			HTTP: s.HTTPClient, Policy: s.Retry, Timeout: s.Timeout, Check: s.Check,
			Sleep: s.Sleep, Rand: s.Rand, Now: s.Now,
		}),
		explain:    s.Explain,
		key:        key,
		renderOnly: s.RenderOnly,
	}
	b.explain.Who = b.Endpoint
	b.explain.KeyEnv = s.APIKeyEnv
	return b, key, nil
}

// Complete makes the attempts of one request (Client.Call) and turns a
// failure into the error a provider's Complete returns (Explain).
func (b *Base) Complete(ctx context.Context, onRetry func(shell.ModelRetry), attempt func(ctx context.Context) (core.ModelReply, error)) (core.ModelReply, error) {
	if b.renderOnly {
		return core.ModelReply{}, Permanentf("%s: built to render requests only, it sends none", b.Endpoint)
	}
	var reply core.ModelReply
	err := b.HTTP.Call(ctx, onRetry, func(ctx context.Context) error {
		var err error
		reply, err = attempt(ctx)
		return err
	})
	if err != nil {
		return core.ModelReply{}, Explain(ctx, err, b.explain)
	}
	return reply, nil
}

// Endpoint names a provider's model and endpoint in messages; it never
// holds the key.
type Endpoint struct {
	Provider, Model, BaseURL string
}

// String is `NAME model "MODEL" at BASEURL`.
func (e Endpoint) String() string {
	return fmt.Sprintf("%s model %q at %s", e.Provider, e.Model, e.BaseURL)
}

// CheckObject vets a 2xx body that should be a JSON object whose key kind
// is the string want and whose key list holds an array (a proxy's error
// page or a cut reply is not): "the reply is not a NOUN (why)" or "the
// reply is not a NOUN with LIST", with the body quoted.
func CheckObject(body []byte, noun, kind, want, list string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("the reply is not a %s (%v)%s", noun, err, Quoted(body))
	}
	var got string
	if json.Unmarshal(m[kind], &got) != nil || got != want || !bytes.HasPrefix(bytes.TrimSpace(m[list]), []byte("[")) {
		return fmt.Errorf("the reply is not a %s with %s%s", noun, list, Quoted(body))
	}
	return nil
}
