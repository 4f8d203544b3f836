package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults of ImageOptions.
const (
	DefaultImageAPIKeyEnv = "OPENAI_API_KEY"
	DefaultImageModel     = "gpt-image-1"
	DefaultImageTimeout   = 60 * time.Second
	maxImageResponse      = 32 << 20
)

// ImageOptions configures generate_image. Zero values mean the defaults.
type ImageOptions struct {
	// BaseURL is an OpenAI-compatible server (required): the tool posts
	// to {BaseURL}/images/generations, so it ends in /v1 for OpenAI
	// ("https://api.openai.com/v1") and for servers that copy it.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key, read at
	// call time (default DefaultImageAPIKeyEnv; unset: no key is sent).
	APIKeyEnv string
	// Model is the image model (default DefaultImageModel).
	Model string
	// Timeout bounds one generation (default DefaultImageTimeout).
	Timeout time.Duration
	// Transport makes the requests (nil: a clone of http.DefaultTransport).
	Transport http.RoundTripper
}

func (o ImageOptions) validate() error {
	u, err := url.Parse(o.BaseURL)
	if o.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("generate_image: base_url %q: want the http or https URL of an OpenAI-compatible server", o.BaseURL)
	}
	if o.Timeout < 0 {
		return errors.New("generate_image: the timeout must not be negative")
	}
	return nil
}

type generateImage struct {
	opts   ImageOptions
	err    error
	client *http.Client
}

// GenerateImage returns the generate_image tool (AI Battle's and EDISON's
// generate_image(prompt, width, height, steps, guidance_scale)): it asks an
// OpenAI-compatible images endpoint for one image and hands it to the model
// as an attachment (the output names its size and, when the server gave
// one, its URL; Sources holds the URL). steps and guidance_scale are sent
// only when the call gives them (diffusion servers read them; OpenAI's own
// does not take them). Not idempotent: each call is a new generation that
// may cost money.
func GenerateImage(opts ImageOptions) shell.Tool {
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = DefaultImageAPIKeyEnv
	}
	if opts.Model == "" {
		opts.Model = DefaultImageModel
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultImageTimeout
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	return &generateImage{opts: opts, err: opts.validate(), client: &http.Client{Transport: opts.Transport}}
}

func (t *generateImage) Spec() core.Tool {
	side := func(what string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 64, "maximum": 4096, "default": 1024, "description": "the image's " + what + " in pixels"}
	}
	return core.Tool{
		Name:        "generate_image",
		Description: "Generate an image from a description; the image is shown to you.",
		Parameters: objectSchema([]prop{
			{"prompt", map[string]any{"type": "string", "minLength": 1, "description": "what the image shows"}},
			{"width", side("width")},
			{"height", side("height")},
			{"steps", map[string]any{"type": "integer", "minimum": 1, "maximum": 200, "description": "diffusion steps, for servers that take them"}},
			{"guidance_scale", map[string]any{"type": "number", "minimum": 0, "maximum": 50, "description": "how closely to follow the prompt, for servers that take it"}},
		}, "prompt"),
	}
}

type imageArgs struct {
	Prompt        string   `json:"prompt"`
	Width         int      `json:"width"`
	Height        int      `json:"height"`
	Steps         *int     `json:"steps"`
	GuidanceScale *float64 `json:"guidance_scale"`
}

func (t *generateImage) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	if t.err != nil {
		return failf(call, "misconfigured: %v", t.err)
	}
	a := imageArgs{Width: 1024, Height: 1024}
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	req := map[string]any{"model": t.opts.Model, "prompt": a.Prompt, "n": 1, "size": fmt.Sprintf("%dx%d", a.Width, a.Height),
		"response_format": "b64_json"}
	if a.Steps != nil {
		req["steps"] = *a.Steps
	}
	if a.GuidanceScale != nil {
		req["guidance_scale"] = *a.GuidanceScale
	}
	body, _ := json.Marshal(req)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, t.opts.BaseURL+"/images/generations", bytes.NewReader(body))
	if err != nil {
		return failf(call, "%v", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if key := os.Getenv(t.opts.APIKeyEnv); key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := t.client.Do(hr)
	switch {
	case parent.Err() != nil:
		return interrupted(call, parent.Err())
	case ctx.Err() != nil:
		return transientf(call, "the image server did not answer within %s", t.opts.Timeout)
	case err != nil:
		return transientf(call, "the image server: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxImageResponse+1))
	if err != nil {
		return transientf(call, "reading the image: %v", err)
	}
	if len(raw) > maxImageResponse {
		return failf(call, "the image server's answer is larger than %d MiB", maxImageResponse>>20)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		r := failf(call, "the image server answered %s: %s", resp.Status, clipRunes(msg, 300))
		r.Transient = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return r
	}
	var out struct {
		Data []struct {
			B64JSON       string `json:"b64_json"`
			URL           string `json:"url"`
			RevisedPrompt string `json:"revised_prompt"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Data) == 0 {
		return failf(call, "the image server's answer holds no image")
	}
	img := out.Data[0]
	res := core.ToolResult{CallID: call.ID}
	text := fmt.Sprintf("Generated a %dx%d image", a.Width, a.Height)
	if img.B64JSON != "" {
		data, err := base64.StdEncoding.DecodeString(img.B64JSON)
		if err != nil {
			return failf(call, "the image is not base64: %v", err)
		}
		mime := http.DetectContentType(data)
		if !strings.HasPrefix(mime, "image/") {
			return failf(call, "the server's image is %s, not an image", mime)
		}
		res.Attachments = []core.Attachment{{MIME: mime, Data: data}}
		text += fmt.Sprintf(" (%s, %d bytes)", mime, len(data))
	}
	if img.URL != "" {
		text += ": " + img.URL
		res.Sources = []string{img.URL}
	}
	if img.B64JSON == "" && img.URL == "" {
		return failf(call, "the image server's answer holds no image")
	}
	if img.RevisedPrompt != "" {
		text += "\nThe server revised the prompt to: " + img.RevisedPrompt
	}
	res.Output = text + "."
	return res
}

// clipRunes cuts s to n characters.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
