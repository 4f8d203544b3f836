package httpcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// StatusError is a reply with a status other than 2xx, or an error the
// server sent inside a stream (given the status it stands for: 529 for
// Anthropic's overloaded_error).
type StatusError struct {
	Status int
	Header http.Header
	// Message is the server's message, or the start of the body.
	Message string
	// Type is the server's error type or code, when it gave one
	// ("rate_limit_error", "invalid_api_key").
	Type string
}

func (e *StatusError) Error() string { return "status " + StatusText(e.Status, e.Message) }

// Retryable reports whether the status may go away on its own.
func (e *StatusError) Retryable() bool { return RetryableStatus(e.Status) }

// RetryableStatus reports whether a status may go away on its own: 408,
// 409, 429 and 5xx.
func RetryableStatus(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return true
	case status >= 500:
		return true
	}
	return false
}

// GaveUpError ends the retries of a transient failure: the attempts ran
// out, the time limit (MaxElapsed) passed, or the server asked to wait
// beyond it. It deliberately does not unwrap: the last error may be an
// idle timeout, which callers must not take for a deadline of their own.
type GaveUpError struct {
	Attempts int
	Status   int    // the last status; 0 after a transport or reply error
	Message  string // the server's message with Status
	Err      error  // the last error when there was no status
	// RetryAfter is the wait the server asked for in its last reply, if any.
	RetryAfter time.Duration
	// Stop is why the retries ended before the attempts ran out (0: they
	// ran out); Limit is then the policy's MaxElapsed.
	Stop  StopReason
	Limit time.Duration
}

// StopReason says why the retries ended before the attempts ran out.
type StopReason int

// Stop reasons.
const (
	StopElapsed StopReason = iota + 1 // MaxElapsed has passed
	StopAsked                         // the server asked for a wait beyond MaxElapsed
)

func (e *GaveUpError) Error() string {
	last := "status " + StatusText(e.Status, e.Message)
	if e.Err != nil {
		last = e.Err.Error()
	}
	switch e.Stop {
	case StopAsked:
		return fmt.Sprintf("the server asked to wait %v before retrying, beyond the retry time limit of %v; gave up after %s (last: %s)",
			e.RetryAfter, e.Limit, attempts(e.Attempts), last)
	case StopElapsed:
		return fmt.Sprintf("gave up after %s: the retry time limit of %v has passed (last: %s)", attempts(e.Attempts), e.Limit, last)
	}
	return fmt.Sprintf("gave up after %s (last: %s)", attempts(e.Attempts), last)
}

// Transient is the error a provider returns when its retries of a
// transient failure ran out: the runner stalls the run on it.
func (e *GaveUpError) Transient(what string) *shell.TransientError {
	return &shell.TransientError{Err: fmt.Errorf("%s: %s", what, e.Error()), Attempts: e.Attempts, RetryAfter: e.RetryAfter}
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// StatusText is "429 Too Many Requests: msg".
func StatusText(status int, msg string) string {
	s := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if status == 529 {
		s = "529 Overloaded"
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// PermanentError is a failure that retrying cannot fix: its message is the
// explanation alone, and errors.Is(err, shell.ErrModelPermanent) holds.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() []error {
	return []error{e.Err, shell.ErrModelPermanent}
}

// Permanentf makes a PermanentError.
func Permanentf(format string, args ...any) error {
	return &PermanentError{Err: fmt.Errorf(format, args...)}
}

// BadReplyError is a 2xx reply a provider cannot use: retried like a 5xx.
type BadReplyError struct{ Err error }

func (e *BadReplyError) Error() string { return e.Err.Error() }
func (e *BadReplyError) Unwrap() error { return e.Err }

// BadReplyf makes a BadReplyError.
func BadReplyf(format string, args ...any) error {
	return &BadReplyError{Err: fmt.Errorf(format, args...)}
}

// errIdle is the cause of an attempt's context when it received nothing
// for the timeout.
var errIdle = errors.New("idle")

// ServerMessage extracts the error message from a reply body: OpenAI's
// {"error":{"message":...}}, Anthropic's {"type":"error","error":{...}},
// Ollama's {"error":"..."}, or the body itself, shortened. typ is the
// error's type or code, when there is one.
func ServerMessage(body []byte) (msg, typ string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		var str string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			typ = obj.Type
			if c, ok := obj.Code.(string); ok && c != "" {
				typ = c
			}
			return obj.Message, typ
		case json.Unmarshal(v.Error, &str) == nil && str != "":
			return str, ""
		case v.Message != "":
			return v.Message, ""
		}
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s, ""
}

// Quoted is ": " and the server's message in body, or nothing.
func Quoted(body []byte) string {
	if m, _ := ServerMessage(body); m != "" {
		return ": " + m
	}
	return ""
}
