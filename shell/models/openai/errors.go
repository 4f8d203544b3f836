package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/shell"
)

// statusError is a reply whose status retrying cannot fix.
type statusError struct {
	Status  int
	Message string // the server's message, or the start of the body
}

func (e *statusError) Error() string { return "status " + statusText(e.Status, e.Message) }

// gaveUpError ends the retries of a transient failure: the attempts ran
// out, the time limit (MaxElapsed) passed, or the server asked to wait
// beyond it. It deliberately does not unwrap: the last transport error may
// be a per-attempt timeout, which callers must not take for a deadline of
// their own.
type gaveUpError struct {
	Attempts int
	Status   int    // the last status; 0 after a transport error
	Message  string // the server's message with Status
	Err      error  // the last transport error, or why a 2xx reply was unusable
	// RetryAfter is the wait the server asked for in its last reply, if any.
	RetryAfter time.Duration
	// Stop is why the retries ended before the attempts ran out (0: they
	// ran out); Limit is then the policy's MaxElapsed.
	Stop  stopReason
	Limit time.Duration
}

func (e *gaveUpError) Error() string {
	last := "status " + statusText(e.Status, e.Message)
	if e.Err != nil {
		last = e.Err.Error()
	}
	switch e.Stop {
	case stopAsked:
		return fmt.Sprintf("the server asked to wait %v before retrying, beyond the retry time limit of %v; gave up after %s (last: %s)",
			e.RetryAfter, e.Limit, attempts(e.Attempts), last)
	case stopElapsed:
		return fmt.Sprintf("gave up after %s: the retry time limit of %v has passed (last: %s)", attempts(e.Attempts), e.Limit, last)
	}
	return fmt.Sprintf("gave up after %s (last: %s)", attempts(e.Attempts), last)
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func statusText(status int, msg string) string {
	s := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// serverMessage extracts the error message from a reply body: OpenAI's
// {"error":{"message":...}}, Ollama's {"error":"..."}, or the body itself,
// shortened.
func serverMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var str string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(v.Error, &str) == nil && str != "":
			return str
		case v.Message != "":
			return v.Message
		}
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// explain turns what CreateChatCompletion returned into the error Complete
// returns: ctx.Err() when ctx ended, a permanent error for statuses retrying
// cannot fix, a *shell.TransientError when the retries of a transient
// failure ran out, a plain error otherwise.
func (p *Provider) explain(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var se *statusError
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
			return permanentf("%s: the endpoint rejected the request (%s)", p, statusText(se.Status, se.Message))
		}
	}
	var ge *gaveUpError
	if errors.As(err, &ge) {
		return &shell.TransientError{Err: fmt.Errorf("%s: %s", p, ge.Error()), Attempts: ge.Attempts, RetryAfter: ge.RetryAfter}
	}
	if errors.Is(err, goopenai.ErrChatCompletionInvalidModel) {
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

// permanentError is an error that retrying cannot fix: its message is the
// explanation alone, and errors.Is(err, shell.ErrModelPermanent) holds.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }
func (e *permanentError) Unwrap() error { return shell.ErrModelPermanent }

func permanentf(format string, args ...any) error {
	return &permanentError{msg: fmt.Sprintf(format, args...)}
}
