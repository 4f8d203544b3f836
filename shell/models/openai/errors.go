package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// gaveUpError ends the retries: the attempts ran out, or the server asked to
// wait longer than MaxBackoff. It deliberately does not unwrap: the last
// transport error may be a per-attempt timeout, which callers must not take
// for a deadline of their own.
type gaveUpError struct {
	Attempts int
	Status   int    // the last status; 0 after a transport error
	Message  string // the server's message with Status
	Err      error  // the last transport error
	// Wait is what the server asked for, when it exceeded MaxBackoff.
	Wait, MaxBackoff time.Duration
}

func (e *gaveUpError) Error() string {
	last := "status " + statusText(e.Status, e.Message)
	if e.Err != nil {
		last = e.Err.Error()
	}
	if e.Wait > 0 {
		return fmt.Sprintf("the server asked to wait %v before retrying, longer than the maximum backoff of %v; gave up after %s (last: %s)",
			e.Wait, e.MaxBackoff, attempts(e.Attempts), last)
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
// cannot fix, a plain error otherwise.
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
			return permanentf("model %q or endpoint not found at %s (404)%s", p.model, p.baseURL, said)
		default:
			return permanentf("%s: the endpoint rejected the request (%s)", p, statusText(se.Status, se.Message))
		}
	}
	var ge *gaveUpError
	if errors.As(err, &ge) {
		return fmt.Errorf("%s: %s", p, ge.Error())
	}
	if errors.Is(err, goopenai.ErrChatCompletionInvalidModel) {
		return permanentf("%s: %v", p, err)
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return fmt.Errorf("%s: the reply is not a chat completion: %w", p, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// permanentError is an error that retrying cannot fix: its message is the
// explanation alone, and errors.Is(err, shell.ErrModelPermanent) holds.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }
func (e *permanentError) Unwrap() error { return shell.ErrModelPermanent }

func permanentf(format string, args ...any) error {
	return &permanentError{msg: fmt.Sprintf(format, args...)}
}
