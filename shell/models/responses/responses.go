package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
	oresp "github.com/openai/openai-go/v3/responses"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// Name is the provider's name, in agent files and in the opaque data it
// keeps.
const Name = "openai-responses"

// DefaultBaseURL is the API root used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures a Provider. The zero value of a field means its
// default.
type Options struct {
	// BaseURL is the API root, up to and excluding /responses (default
	// DefaultBaseURL).
	BaseURL string
	// Model is the model name. Required.
	Model string
	// APIKeyEnv names the environment variable that holds the API key,
	// read once by New. Empty means no key.
	APIKeyEnv string
	// Timeout is how long an attempt may receive nothing (default
	// httpcall.DefaultTimeout).
	Timeout time.Duration
	// Retry says how transient failures are retried (zero fields:
	// shell.DefaultModelRetry's).
	Retry shell.RetryPolicy
	// Temperature is sent when set.
	Temperature *float32
	// MaxTokens caps the reply (max_output_tokens) when positive.
	MaxTokens int
	// ReasoningEffort is sent as reasoning.effort when set ("minimal",
	// "low", "medium", "high"); ReasoningSummary as reasoning.summary
	// ("auto", "concise", "detailed"), which some organisations must be
	// verified for.
	ReasoningEffort  string
	ReasoningSummary string
	// NoStream sends requests without "stream": true.
	NoStream bool
	// HTTPClient sends the requests (default: a new http.Client).
	HTTPClient *http.Client
	// Sleep, Rand and Now are the retries' clock and jitter (tests).
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
	Now   func() time.Time
}

// Provider is a shell.ModelProvider for one model of the Responses API. It
// is safe for concurrent use.
type Provider struct {
	svc    oresp.ResponseService
	http   *httpcall.Client
	o      Options
	keyEnv string
}

var _ shell.ModelProvider = (*Provider)(nil)

// New checks opts, reads the API key from the named variable and returns a
// Provider. A named variable that is unset or empty is an error.
func New(opts Options) (*Provider, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	hc := httpcall.New(httpcall.Options{
		HTTP: o.HTTPClient, Policy: o.Retry, Timeout: o.Timeout, Check: checkResponse,
		Sleep: o.Sleep, Rand: o.Rand, Now: o.Now,
	})
	reqOpts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL), option.WithHTTPClient(hc), option.WithMaxRetries(0),
	}
	if o.APIKeyEnv != "" {
		key := os.Getenv(o.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("%s: the variable %s, named to hold the API key, is unset or empty", Name, o.APIKeyEnv)
		}
		reqOpts = append(reqOpts, option.WithAPIKey(key))
	}
	// The service alone, not openai.NewClient: that would read OPENAI_*
	// variables into every request.
	return &Provider{svc: oresp.NewResponseService(reqOpts...), http: hc, o: o, keyEnv: o.APIKeyEnv}, nil
}

func (o Options) withDefaults() (Options, error) {
	var errs []string
	if strings.TrimSpace(o.Model) == "" {
		errs = append(errs, "model is empty")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Sprintf("base URL %q is not an http or https URL", o.BaseURL))
	}
	if o.Timeout < 0 {
		errs = append(errs, "timeout is negative")
	}
	o.Retry = o.Retry.WithDefaults(shell.DefaultModelRetry)
	if err := o.Retry.Validate(); err != nil {
		errs = append(errs, "retry: "+strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if o.MaxTokens < 0 {
		errs = append(errs, "max tokens is negative")
	}
	switch o.ReasoningEffort {
	case "", "minimal", "low", "medium", "high":
	default:
		errs = append(errs, fmt.Sprintf("reasoning effort %q is not one of minimal, low, medium, high", o.ReasoningEffort))
	}
	switch o.ReasoningSummary {
	case "", "auto", "concise", "detailed":
	default:
		errs = append(errs, fmt.Sprintf("reasoning summary %q is not one of auto, concise, detailed", o.ReasoningSummary))
	}
	if len(errs) > 0 {
		return o, errors.New(strings.Join(errs, "; "))
	}
	return o, nil
}

// String names the model and endpoint; it never shows the key.
func (p *Provider) String() string {
	return fmt.Sprintf("%s model %q at %s", Name, p.o.Model, p.o.BaseURL)
}

// Complete sends one request, streamed unless NoStream, retrying as the
// package doc says.
func (p *Provider) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	params, err := p.params(req)
	if err != nil {
		return core.ModelReply{}, err
	}
	var reply core.ModelReply
	err = p.http.Call(ctx, req.OnRetry, func(ctx context.Context) error {
		var resp *oresp.Response
		var err error
		if p.o.NoStream {
			resp, err = p.svc.New(ctx, params)
		} else {
			resp, err = p.streamed(ctx, params, req.OnDelta)
		}
		if err != nil {
			return err
		}
		reply, err = replyOf(resp)
		return err
	})
	if err != nil {
		return core.ModelReply{}, p.explain(ctx, err)
	}
	return reply, nil
}

// streamed makes one streamed attempt and returns the final response.
func (p *Provider) streamed(ctx context.Context, params oresp.ResponseNewParams, onDelta func(shell.ModelDelta)) (*oresp.Response, error) {
	stream := p.svc.NewStreaming(ctx, params)
	defer stream.Close()
	if body := httpcall.Plain(ctx); body != nil {
		var resp oresp.Response
		if err := json.Unmarshal(body, &resp); err != nil {
			return nil, httpcall.BadReplyf("the reply is not a response (%v)", err)
		}
		return &resp, nil
	}
	calls := map[int64]int{} // output index -> call number
	started := false
	for stream.Next() {
		started = true
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			tell(onDelta, shell.ModelDelta{Kind: shell.DeltaText, Text: ev.Delta})
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			tell(onDelta, shell.ModelDelta{Kind: shell.DeltaReasoning, Text: ev.Delta})
		case "response.output_item.added":
			if ev.Item.Type == "function_call" {
				n := len(calls)
				calls[ev.OutputIndex] = n
				tell(onDelta, shell.ModelDelta{Kind: shell.DeltaCall, Call: n, Name: ev.Item.Name})
			}
		case "response.function_call_arguments.delta":
			tell(onDelta, shell.ModelDelta{Kind: shell.DeltaCall, Call: calls[ev.OutputIndex], Text: ev.Delta})
		case "response.completed", "response.incomplete", "response.failed":
			resp := ev.Response
			return &resp, nil
		case "error":
			return nil, codeError(ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		if !started {
			return nil, err // the request failed: Do said why
		}
		return nil, streamError(err)
	}
	return nil, httpcall.BadReplyf("the stream ended before the response was complete")
}

func tell(onDelta func(shell.ModelDelta), d shell.ModelDelta) {
	if onDelta != nil && (d.Text != "" || d.Name != "") {
		onDelta(d)
	}
}
