package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
)

// Name is the provider's name, in agent files and in the opaque data it
// keeps.
const Name = "anthropic"

// Defaults used where Options leaves a field at its zero value.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 8192
)

// Options configures a Provider. The zero value of a field means its
// default.
type Options struct {
	// BaseURL is the API root, up to and excluding /v1/messages (default
	// DefaultBaseURL).
	BaseURL string
	// Model is the model name ("claude-sonnet-4-5"). Required.
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
	// MaxTokens caps the reply (default DefaultMaxTokens; the API requires
	// a cap).
	MaxTokens int
	// ThinkingBudget, when positive, turns extended thinking on with this
	// many tokens (at least 1024, below MaxTokens).
	ThinkingBudget int
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

// Provider is a shell.ModelProvider for one Anthropic model. It is safe
// for concurrent use.
type Provider struct {
	base *httpcall.Base
	svc  sdk.MessageService
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
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.ThinkingBudget != 0 && o.MaxTokens > 0 && !thinkingFits(o.ThinkingBudget, o.MaxTokens) {
		problems = append(problems, fmt.Sprintf("thinking budget %d is not at least 1024 and below max tokens (%d)", o.ThinkingBudget, o.MaxTokens))
	}
	base, key, err := httpcall.Open(httpcall.Setup{
		Name: Name, Model: o.Model, BaseURL: o.BaseURL, DefaultBaseURL: DefaultBaseURL, APIKeyEnv: o.APIKeyEnv,
		Timeout: o.Timeout, Retry: o.Retry, MaxTokens: o.MaxTokens, Problems: problems, Check: checkMessage,
		HTTPClient: o.HTTPClient, Sleep: o.Sleep, Rand: o.Rand, Now: o.Now, RenderOnly: o.RenderOnly,
		Explain: httpcall.Provider{KeyHint: " (api_key_env)"},
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
	// The service alone, not sdk.NewClient: that would read ANTHROPIC_*
	// variables and profiles.
	return &Provider{base: base, svc: sdk.NewMessageService(reqOpts...), o: o}, nil
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
func (p *Provider) attempt(params sdk.MessageNewParams, onDelta func(shell.ModelDelta)) func(ctx context.Context) (core.ModelReply, error) {
	return func(ctx context.Context) (core.ModelReply, error) {
		var msg *sdk.Message
		var err error
		if p.o.NoStream {
			msg, err = p.svc.New(ctx, params)
		} else {
			msg, err = p.streamed(ctx, params, onDelta)
		}
		if err != nil {
			return core.ModelReply{}, err
		}
		return replyOf(msg)
	}
}

// streamed makes one streamed attempt and returns the assembled message.
func (p *Provider) streamed(ctx context.Context, params sdk.MessageNewParams, onDelta func(shell.ModelDelta)) (*sdk.Message, error) {
	var msg sdk.Message
	deltas := streamed.NewDeltas(onDelta)
	stopped := false
	return streamed.Read(ctx, p.svc.NewStreaming(ctx, params), streamed.Reader[sdk.MessageStreamEventUnion, sdk.Message]{
		Noun: "message",
		Event: func(ev sdk.MessageStreamEventUnion) (*sdk.Message, error) {
			if err := msg.Accumulate(ev); err != nil {
				return nil, httpcall.BadReplyf("the stream does not add up: %v", err)
			}
			switch ev.Type {
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" {
					deltas.CallStart(ev.Index, ev.ContentBlock.Name)
				}
			case "content_block_delta":
				switch ev.Delta.Type {
				case "text_delta":
					deltas.Text(ev.Delta.Text)
				case "thinking_delta":
					deltas.Reasoning(ev.Delta.Thinking)
				case "input_json_delta":
					deltas.CallArgs(ev.Index, ev.Delta.PartialJSON)
				}
			case "message_stop":
				stopped = true
			}
			return nil, nil
		},
		End: func() (*sdk.Message, error) {
			if !stopped {
				return nil, httpcall.BadReplyf("the stream ended before message_stop")
			}
			return &msg, nil
		},
		Broke:  streamError,
		Deltas: deltas,
	})
}
