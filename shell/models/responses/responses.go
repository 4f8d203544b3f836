package responses

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/openai/openai-go/v3/option"
	oresp "github.com/openai/openai-go/v3/responses"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
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
	// RenderOnly builds a provider that renders requests (RenderRequest)
	// and sends none: the API key's variable is not read (its marker
	// stands in for the key) and Complete fails permanently.
	RenderOnly bool
}

// Provider is a shell.ModelProvider for one model of the Responses API. It
// is safe for concurrent use.
type Provider struct {
	base *httpcall.Base
	svc  oresp.ResponseService
	o    Options
}

var (
	_ shell.ModelProvider   = (*Provider)(nil)
	_ shell.RequestRenderer = (*Provider)(nil)
)

// New checks opts, reads the API key from the named variable and returns a
// Provider. A named variable that is unset or empty is an error.
func New(opts Options) (*Provider, error) {
	o := opts
	var problems []string
	if !slices.Contains(efforts, o.ReasoningEffort) {
		problems = append(problems, fmt.Sprintf("reasoning effort %q is not one of minimal, low, medium, high", o.ReasoningEffort))
	}
	if !slices.Contains(summaries, o.ReasoningSummary) {
		problems = append(problems, fmt.Sprintf("reasoning summary %q is not one of auto, concise, detailed", o.ReasoningSummary))
	}
	base, key, err := httpcall.Open(httpcall.Setup{
		Name: Name, Model: o.Model, BaseURL: o.BaseURL, DefaultBaseURL: DefaultBaseURL, APIKeyEnv: o.APIKeyEnv,
		Timeout: o.Timeout, Retry: o.Retry, MaxTokens: o.MaxTokens, Problems: problems, Check: checkResponse,
		HTTPClient: o.HTTPClient, Sleep: o.Sleep, Rand: o.Rand, Now: o.Now, RenderOnly: o.RenderOnly,
	})
	if err != nil {
		return nil, err
	}
	o.BaseURL, o.Retry = base.Endpoint.BaseURL, base.Retry
	reqOpts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL), option.WithHTTPClient(base.HTTP), option.WithMaxRetries(0),
	}
	if key != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(key))
	}
	// The service alone, not openai.NewClient: that would read OPENAI_*
	// variables into every request.
	return &Provider{base: base, svc: oresp.NewResponseService(reqOpts...), o: o}, nil
}

// String names the model and endpoint; it never shows the key.
func (p *Provider) String() string { return p.base.Endpoint.String() }

// Complete sends one request, streamed unless NoStream, retrying as the
// package doc says.
func (p *Provider) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	params, err := p.params(req)
	if err != nil {
		return core.ModelReply{}, err
	}
	return p.base.Complete(ctx, req.OnRetry, p.attempt(params, req.OnDelta))
}

// RenderRequest renders the request Complete sends for req
// (shell.RequestRenderer): one attempt of it, which the SDK builds as for
// Complete, kept instead of sent.
func (p *Provider) RenderRequest(req shell.ModelRequest) (shell.RenderedRequest, error) {
	params, err := p.params(req)
	if err != nil {
		return shell.RenderedRequest{}, err
	}
	return p.base.Render(p.attempt(params, nil))
}

// attempt is one attempt of a request: what Complete retries and
// RenderRequest renders.
func (p *Provider) attempt(params oresp.ResponseNewParams, onDelta func(shell.ModelDelta)) func(ctx context.Context) (core.ModelReply, error) {
	return func(ctx context.Context) (core.ModelReply, error) {
		var resp *oresp.Response
		var err error
		if p.o.NoStream {
			resp, err = p.svc.New(ctx, params)
		} else {
			resp, err = p.streamed(ctx, params, onDelta)
		}
		if err != nil {
			return core.ModelReply{}, err
		}
		return replyOf(resp)
	}
}

// streamed makes one streamed attempt and returns the final response.
func (p *Provider) streamed(ctx context.Context, params oresp.ResponseNewParams, onDelta func(shell.ModelDelta)) (*oresp.Response, error) {
	deltas := streamed.NewDeltas(onDelta)
	return streamed.Read(ctx, p.svc.NewStreaming(ctx, params), streamed.Reader[oresp.ResponseStreamEventUnion, oresp.Response]{
		Noun: "response",
		Event: func(ev oresp.ResponseStreamEventUnion) (*oresp.Response, error) {
			switch ev.Type {
			case "response.output_text.delta", "response.refusal.delta":
				deltas.Text(ev.Delta)
			case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
				deltas.Reasoning(ev.Delta)
			case "response.output_item.added":
				if ev.Item.Type == "function_call" {
					deltas.CallStart(ev.OutputIndex, ev.Item.Name)
				}
			case "response.function_call_arguments.delta":
				deltas.CallArgs(ev.OutputIndex, ev.Delta)
			case "response.completed", "response.incomplete", "response.failed":
				resp := ev.Response
				return &resp, nil
			case "error":
				return nil, codeError(ev.Code, ev.Message)
			}
			return nil, nil
		},
		End: func() (*oresp.Response, error) {
			return nil, httpcall.BadReplyf("the stream ended before the response was complete")
		},
		Broke:  streamError,
		Deltas: deltas,
	})
}
