package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
)

// Defaults used where Options leaves a field at its zero value (the retry
// policy's are shell.DefaultModelRetry).
const (
	DefaultBaseURL         = "https://api.openai.com/v1"
	DefaultTimeout         = 60 * time.Second
	DefaultAzureAPIVersion = "2024-10-21"
)

// Options configures a Provider. The zero value of a field means its default.
type Options struct {
	// BaseURL is the API root, up to and excluding /chat/completions
	// (default DefaultBaseURL). For Azure, the resource endpoint.
	BaseURL string
	// Model is the model name (for Azure, the deployment name). Required.
	Model string
	// APIKeyEnv names the environment variable that holds the API key. It is
	// read once, by New. Empty means no key (fine for Ollama, llama.cpp).
	APIKeyEnv string
	// Timeout is how long an attempt may receive nothing: no reply to the
	// request, or no data within a streamed reply (default
	// DefaultTimeout). Complete as a whole is bounded by its ctx.
	Timeout time.Duration
	// Retry says how transient failures are retried. Its zero fields are
	// taken from MaxRetries, BackoffBase and MaxBackoff when those are set,
	// else from shell.DefaultModelRetry.
	Retry shell.RetryPolicy
	// MaxRetries is the older way to set Retry.Attempts: n retries are n+1
	// attempts, -1 means none (one attempt). Retry.Attempts wins when both
	// are set.
	MaxRetries int
	// BackoffBase and MaxBackoff are the older names of Retry.Backoff and
	// Retry.MaxBackoff, used when those are zero.
	BackoffBase time.Duration
	MaxBackoff  time.Duration
	// Temperature is sent when set.
	Temperature *float32
	// MaxTokens caps the reply's length when positive.
	MaxTokens int
	// NoStream sends requests without "stream": true, for servers that
	// cannot stream. The reply is the same either way.
	NoStream bool
	// APIVersion is the Azure api-version (default DefaultAzureAPIVersion);
	// ignored for other endpoints.
	APIVersion string
	// HTTPClient sends the requests (default: a new http.Client).
	HTTPClient *http.Client
	// Sleep waits between attempts; it must return ctx.Err() when ctx ends
	// first. The default waits on a timer. Tests record the waits with it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand draws the jitter, uniformly from [0, 1) (default: math/rand/v2).
	Rand func() float64
	// Now is the clock Retry.MaxElapsed is measured by (default time.Now).
	Now func() time.Time
	// Accepts lists what the model takes besides text: AcceptImage,
	// AcceptAudio. Attachments of those kinds are sent to it as content
	// parts; others stay text placeholders (the default: none).
	Accepts []string
	// RenderOnly builds a provider that renders requests (RenderRequest)
	// and sends none: the API key's variable is not read (its marker
	// stands in for the key) and Complete fails permanently.
	RenderOnly bool
}

// Provider is a shell.ModelProvider for one model at one OpenAI-compatible
// endpoint. It is safe for concurrent use.
type Provider struct {
	base        *httpcall.Base
	client      *goopenai.Client
	stream      bool
	model       string
	temperature *float32
	maxTokens   int
	accepts     accepts
}

var (
	_ shell.ModelProvider   = (*Provider)(nil)
	_ shell.RequestRenderer = (*Provider)(nil)
)

// New checks opts, reads the API key from the named variable and returns a
// Provider. A named variable that is unset or empty is an error.
func New(opts Options) (*Provider, error) {
	o, problems := opts.withDefaults()
	acc, err := parseAccepts(o.Accepts)
	if err != nil {
		problems = append(problems, err.Error())
	}
	base, key, err := httpcall.Open(httpcall.Setup{
		Name: Name, Model: o.Model, BaseURL: o.BaseURL, APIKeyEnv: o.APIKeyEnv,
		Timeout: o.Timeout, Retry: o.Retry, MaxTokens: o.MaxTokens, Problems: problems, Check: checkCompletion,
		HTTPClient: o.HTTPClient, Sleep: o.Sleep, Rand: o.Rand, Now: o.Now, RenderOnly: o.RenderOnly,
		Explain: httpcall.Provider{
			NotFound: func(said string) error {
				return httpcall.Permanentf("model %q or endpoint not found at %s (404)%s%s", o.Model, o.BaseURL, said, versionHint(o.BaseURL))
			},
			Permanent: func(err error) bool { return errors.Is(err, goopenai.ErrChatCompletionInvalidModel) },
		},
	})
	if err != nil {
		return nil, err
	}
	var cfg goopenai.ClientConfig
	if isAzure(o.BaseURL) {
		cfg = goopenai.DefaultAzureConfig(key, o.BaseURL)
		cfg.APIVersion = o.APIVersion
		cfg.AzureModelMapperFunc = func(model string) string { return model }
	} else {
		cfg = goopenai.DefaultConfig(key)
		cfg.BaseURL = o.BaseURL
	}
	// Audio parts are rewritten in the body go-openai writes (attachments.go).
	cfg.HTTPClient = audioParts{base.HTTP}
	return &Provider{
		base:        base,
		client:      goopenai.NewClientWithConfig(cfg),
		stream:      !o.NoStream,
		model:       o.Model,
		temperature: o.Temperature,
		maxTokens:   o.MaxTokens,
		accepts:     acc,
	}, nil
}

// withDefaults fills in the defaults, the older option names included, and
// lists what is wrong with the options only this provider takes (Open
// checks the rest).
func (o Options) withDefaults() (Options, []string) {
	var errs []string
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.MaxRetries < -1 {
		errs = append(errs, "max retries is negative (use -1 for none)")
	}
	if o.Retry.Attempts == 0 && o.MaxRetries != 0 {
		o.Retry.Attempts = max(o.MaxRetries, 0) + 1
	}
	if o.BackoffBase < 0 || o.MaxBackoff < 0 {
		errs = append(errs, "backoffs must not be negative")
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retry.Backoff == 0 {
		o.Retry.Backoff = o.BackoffBase
	}
	if o.Retry.MaxBackoff == 0 {
		o.Retry.MaxBackoff = o.MaxBackoff
	}
	o.Retry = o.Retry.WithDefaults(shell.DefaultModelRetry)
	if o.APIVersion == "" {
		o.APIVersion = DefaultAzureAPIVersion
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return o, errs
}

func isAzure(baseURL string) bool { return strings.Contains(baseURL, "openai.azure.com") }

// String names the model and endpoint; it never shows the key.
func (p *Provider) String() string { return p.base.Endpoint.String() }

// Complete sends one chat-completion request, streamed unless NoStream,
// retrying as the package doc describes, and returns the first choice.
func (p *Provider) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	creq, err := p.chatRequest(req)
	if err != nil {
		return core.ModelReply{}, err
	}
	return p.base.Complete(ctx, req.OnRetry, p.attempt(creq, req.OnDelta))
}

// RenderRequest renders the request Complete sends for req
// (shell.RequestRenderer): one attempt of it, which go-openai builds and
// the audio rewrite edits as for Complete, kept instead of sent.
func (p *Provider) RenderRequest(req shell.ModelRequest) (shell.RenderedRequest, error) {
	creq, err := p.chatRequest(req)
	if err != nil {
		return shell.RenderedRequest{}, err
	}
	return p.base.Render(p.attempt(creq, nil))
}

// attempt is one attempt of a request: what Complete retries and
// RenderRequest renders.
func (p *Provider) attempt(creq goopenai.ChatCompletionRequest, onDelta func(shell.ModelDelta)) func(ctx context.Context) (core.ModelReply, error) {
	return func(ctx context.Context) (core.ModelReply, error) {
		if p.stream {
			return p.streamed(ctx, creq, onDelta)
		}
		return p.whole(ctx, creq)
	}
}

// whole makes one attempt without streaming.
func (p *Provider) whole(ctx context.Context, creq goopenai.ChatCompletionRequest) (core.ModelReply, error) {
	resp, err := p.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return core.ModelReply{}, err
	}
	return reply(resp), nil
}

// streamed makes one streamed attempt, telling onDelta of each piece. A
// server that answers a whole completion instead is understood too.
func (p *Provider) streamed(ctx context.Context, creq goopenai.ChatCompletionRequest, onDelta func(shell.ModelDelta)) (core.ModelReply, error) {
	creq.Stream = true
	creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	stream, err := p.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return core.ModelReply{}, err
	}
	defer stream.Close()
	if body := httpcall.Plain(ctx); body != nil {
		var resp goopenai.ChatCompletionResponse
		if err := json.Unmarshal(body, &resp); err != nil {
			return core.ModelReply{}, httpcall.BadReplyf("the reply is not a chat completion (%v)", err)
		}
		return reply(resp), nil
	}
	acc := accumulator{deltas: streamed.NewDeltas(onDelta)}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return acc.reply()
		}
		if err != nil {
			return core.ModelReply{}, streamError(err)
		}
		acc.add(chunk)
		if err := acc.deltas.Err(); err != nil {
			return core.ModelReply{}, err
		}
	}
}
