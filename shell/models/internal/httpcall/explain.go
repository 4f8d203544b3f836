package httpcall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stepwise-agent/stepwise/shell"
)

// Provider describes a provider to Explain.
type Provider struct {
	// Who names the provider (its model and endpoint, never its key); every
	// message starts with it.
	Who fmt.Stringer
	// KeyEnv is the variable the API key came from ("": no key was sent),
	// and KeyHint what to add to the advice to name one (" (api_key_env)").
	KeyEnv, KeyHint string
	// NotFound, when set, words a 404 (said is the server's message, as
	// " (the server said: …)" or ""); by default "model or endpoint not
	// found (404)".
	NotFound func(said string) error
	// Permanent reports the provider's own errors that retrying cannot fix,
	// besides shell.ErrModelPermanent.
	Permanent func(error) bool
}

// Overflowed reports whether a refusal is the provider's "too long for the
// context window": a 400 or 413 whose code is context_length_exceeded
// (OpenAI, the Responses API, vLLM and most OpenAI-compatible servers) or
// whose message says the prompt is too long or over the maximum context
// length (Anthropic, llama.cpp, Ollama).
func Overflowed(se *StatusError) bool {
	if se.Status != http.StatusBadRequest && se.Status != http.StatusRequestEntityTooLarge {
		return false
	}
	if se.Type == "context_length_exceeded" {
		return true
	}
	msg := strings.ToLower(se.Message)
	for _, s := range []string{"context_length_exceeded", "maximum context length", "prompt is too long", "context window",
		"exceeds the context", "exceeds the available context", "too many tokens", "input is too long", "request too large"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Explain turns what Client.Call returned into the error a provider's
// Complete returns: ctx.Err() when ctx ended; a permanent error that says
// what to check for a refused key, a 404 or another status retrying cannot
// fix; a *shell.TransientError when the retries of a transient failure ran
// out; else err, named by the provider.
func Explain(ctx context.Context, err error, p Provider) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var se *StatusError
	if errors.As(err, &se) {
		said := ""
		if se.Message != "" {
			said = fmt.Sprintf(" (the server said: %s)", se.Message)
		}
		switch se.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			if p.KeyEnv == "" {
				return Permanentf("%s: the endpoint refused the request (%d) and no API key was sent; name the variable that holds the key%s%s", p.Who, se.Status, p.KeyHint, said)
			}
			return Permanentf("%s: the endpoint refused the API key (%d); check the variable %s%s", p.Who, se.Status, p.KeyEnv, said)
		case http.StatusNotFound:
			if p.NotFound != nil {
				return p.NotFound(said)
			}
			return Permanentf("%s: model or endpoint not found (404)%s", p.Who, said)
		}
		if Overflowed(se) {
			return &PermanentError{Err: fmt.Errorf("%s: the request is longer than the model's context (%s): %w", p.Who, StatusText(se.Status, se.Message), shell.ErrContextOverflow)}
		}
		return Permanentf("%s: the endpoint rejected the request (%s)", p.Who, StatusText(se.Status, se.Message))
	}
	var ge *GaveUpError
	if errors.As(err, &ge) {
		return ge.Transient(p.Who.String())
	}
	if errors.Is(err, shell.ErrModelPermanent) || (p.Permanent != nil && p.Permanent(err)) {
		return Permanentf("%s: %v", p.Who, err)
	}
	return fmt.Errorf("%s: %w", p.Who, err)
}
