package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// explain turns what CreateChatCompletion returned into the error Complete
// returns: ctx.Err() when ctx ended, a permanent error for statuses retrying
// cannot fix, a *shell.TransientError when the retries of a transient
// failure ran out, a plain error otherwise.
func (p *Provider) explain(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var se *httpcall.StatusError
	if errors.As(err, &se) {
		said := ""
		if se.Message != "" {
			said = fmt.Sprintf(" (the server said: %s)", se.Message)
		}
		switch se.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			if p.keyEnv == "" {
				return permanentf("%s: the endpoint refused the request (%d) and no API key was sent; name the variable that holds the key%s", p, se.Status, said)
			}
			return permanentf("the endpoint refused the API key (%d); check the variable %s%s", se.Status, p.keyEnv, said)
		case http.StatusNotFound:
			return permanentf("model %q or endpoint not found at %s (404)%s%s", p.model, p.baseURL, said, versionHint(p.baseURL))
		default:
			return permanentf("%s: the endpoint rejected the request (%s)", p, httpcall.StatusText(se.Status, se.Message))
		}
	}
	var ge *httpcall.GaveUpError
	if errors.As(err, &ge) {
		return ge.Transient(p.String())
	}
	if errors.Is(err, goopenai.ErrChatCompletionInvalidModel) || errors.Is(err, shell.ErrModelPermanent) {
		return permanentf("%s: %v", p, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// versionSegment matches an API version in a URL path segment: v1, v1beta.
var versionSegment = regexp.MustCompile(`^v\d+([a-z]+\d*)?$`)

// versionHint suggests /v1 for a 404 from a base URL with no version in
// its path (http://localhost:11434 for Ollama's http://localhost:11434/v1).
func versionHint(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || isAzure(baseURL) {
		return ""
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if versionSegment.MatchString(seg) {
			return ""
		}
	}
	return fmt.Sprintf("; OpenAI-compatible servers usually serve under /v1: try base_url = %q", strings.TrimRight(baseURL, "/")+"/v1")
}

func permanentf(format string, args ...any) error { return httpcall.Permanentf(format, args...) }
