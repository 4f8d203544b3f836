package anthropic

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

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
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
}

// Provider is a shell.ModelProvider for one Anthropic model. It is safe
// for concurrent use.
type Provider struct {
	svc  sdk.MessageService
	http *httpcall.Client
	o    Options
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
		HTTP: o.HTTPClient, Policy: o.Retry, Timeout: o.Timeout, Check: checkMessage,
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
	// The service alone, not sdk.NewClient: that would read ANTHROPIC_*
	// variables and profiles.
	return &Provider{svc: sdk.NewMessageService(reqOpts...), http: hc, o: o}, nil
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
	switch {
	case o.MaxTokens < 0:
		errs = append(errs, "max tokens is negative")
	case o.MaxTokens == 0:
		o.MaxTokens = DefaultMaxTokens
	}
	if o.ThinkingBudget != 0 && (o.ThinkingBudget < 1024 || o.ThinkingBudget >= o.MaxTokens) {
		errs = append(errs, fmt.Sprintf("thinking budget %d is not at least 1024 and below max tokens (%d)", o.ThinkingBudget, o.MaxTokens))
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
		var msg *sdk.Message
		var err error
		if p.o.NoStream {
			msg, err = p.svc.New(ctx, params)
		} else {
			msg, err = p.streamed(ctx, params, req.OnDelta)
		}
		if err != nil {
			return err
		}
		reply, err = replyOf(msg)
		return err
	})
	if err != nil {
		return core.ModelReply{}, p.explain(ctx, err)
	}
	return reply, nil
}

// streamed makes one streamed attempt and returns the assembled message.
func (p *Provider) streamed(ctx context.Context, params sdk.MessageNewParams, onDelta func(shell.ModelDelta)) (*sdk.Message, error) {
	stream := p.svc.NewStreaming(ctx, params)
	defer stream.Close()
	if body := httpcall.Plain(ctx); body != nil {
		var msg sdk.Message
		if err := json.Unmarshal(body, &msg); err != nil {
			return nil, httpcall.BadReplyf("the reply is not a message (%v)", err)
		}
		return &msg, nil
	}
	var msg sdk.Message
	calls := map[int64]int{} // block index -> call number
	started, stopped := false, false
	for stream.Next() {
		started = true
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, httpcall.BadReplyf("the stream does not add up: %v", err)
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				n := len(calls)
				calls[ev.Index] = n
				tell(onDelta, shell.ModelDelta{Kind: shell.DeltaCall, Call: n, Name: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				tell(onDelta, shell.ModelDelta{Kind: shell.DeltaText, Text: ev.Delta.Text})
			case "thinking_delta":
				tell(onDelta, shell.ModelDelta{Kind: shell.DeltaReasoning, Text: ev.Delta.Thinking})
			case "input_json_delta":
				tell(onDelta, shell.ModelDelta{Kind: shell.DeltaCall, Call: calls[ev.Index], Text: ev.Delta.PartialJSON})
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		if !started {
			return nil, err // the request failed: Do said why
		}
		return nil, streamError(err)
	}
	if !stopped {
		return nil, httpcall.BadReplyf("the stream ended before message_stop")
	}
	return &msg, nil
}

func tell(onDelta func(shell.ModelDelta), d shell.ModelDelta) {
	if onDelta != nil && (d.Text != "" || d.Name != "") {
		onDelta(d)
	}
}
