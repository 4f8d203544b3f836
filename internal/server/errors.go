package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

// Error codes, stable: clients match them.
const (
	codeBadRequest          = "bad_request"            // a malformed body or parameter
	codeInvalidResults      = "invalid_results"        // results that do not answer the pause: unknown, duplicate or missing ids
	codeInvalidHistory      = "invalid_history"        // a message history a run cannot start from (core.ErrBadHistory)
	codeNotFound            = "not_found"              // no such run, step or route
	codeUnknownAgent        = "unknown_agent"          // no agent file of that name in the agents directory
	codeInvalidAgent        = "invalid_agent"          // an agent file that does not load
	codeBusy                = "busy"                   // another driver holds the run
	codeAlreadyAnswered     = "already_answered"       // results for a pause already answered
	codeNotPaused           = "not_paused"             // results for a run that waits for none
	codeEnded               = "ended"                  // the run has ended
	codeTooLarge            = "too_large"              // a body over the limit
	codeUnauthorized        = "unauthorized"           // no valid bearer token
	codeMethod              = "method_not_allowed"     // a route without that method
	codeInternal            = "internal"               // a fault the server's log explains
	codeUnavailable         = "unavailable"            // the store cannot be reached now; retry after Retry-After
	codeForbiddenHost       = "forbidden_host"         // a Host header this server does not answer to (DNS rebinding)
	codeForbiddenOrigin     = "forbidden_origin"       // a state-changing request from another site's page
	codeMediaType           = "unsupported_media_type" // a state-changing request without Content-Type: application/json
	codeTooManyStreams      = "too_many_streams"       // past the bound of open event streams; retry after Retry-After
	codeTimeout             = "timeout"                // a request body that did not arrive in time
	codeInProgress          = "in_progress"            // a request with this Idempotency-Key is under way; retry after Retry-After
	codeIdempotencyMismatch = "idempotency_mismatch"   // an Idempotency-Key used again with another body
)

// errorCodes are all the codes, as openapi.json lists them.
var errorCodes = []string{codeBadRequest, codeInvalidResults, codeInvalidHistory, codeNotFound, codeUnknownAgent, codeInvalidAgent, codeBusy,
	codeAlreadyAnswered, codeNotPaused, codeEnded, codeTooLarge, codeUnauthorized, codeMethod, codeInternal,
	codeUnavailable, codeForbiddenHost, codeForbiddenOrigin, codeMediaType, codeTooManyStreams, codeTimeout, codeInProgress, codeIdempotencyMismatch}

// apiError is an error with its HTTP status and code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// classify maps an error from the shell or the store to its HTTP status
// and code.
func classify(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return &apiError{http.StatusNotFound, codeNotFound, err.Error()}
	case errors.Is(err, shell.ErrAlreadyAnswered):
		return &apiError{http.StatusConflict, codeAlreadyAnswered, err.Error()}
	case errors.Is(err, shell.ErrBusy), errors.Is(err, shell.ErrLeaseLost):
		return &apiError{http.StatusConflict, codeBusy, err.Error()}
	case errors.Is(err, shell.ErrNotPaused):
		return &apiError{http.StatusConflict, codeNotPaused, err.Error()}
	case errors.Is(err, shell.ErrNotCancellable), errors.Is(err, shell.ErrRunEnded), errors.Is(err, store.ErrEnded),
		errors.Is(err, core.ErrConversationEnded):
		return &apiError{http.StatusConflict, codeEnded, err.Error()}
	case errors.Is(err, shell.ErrBadResults), errors.Is(err, core.ErrUnknownCall), errors.Is(err, core.ErrDuplicateResult),
		errors.Is(err, core.ErrMissingResults), errors.Is(err, core.ErrWrongResult), errors.Is(err, core.ErrNothingPending):
		return &apiError{http.StatusBadRequest, codeInvalidResults, err.Error()}
	case errors.Is(err, agent.ErrInvalid), errors.Is(err, core.ErrInvalidConfig):
		return &apiError{http.StatusUnprocessableEntity, codeInvalidAgent, err.Error()}
	case errors.Is(err, shell.ErrInputTooLarge), errors.Is(err, core.ErrMessageTooLarge):
		return &apiError{http.StatusRequestEntityTooLarge, codeTooLarge, err.Error()}
	case errors.Is(err, core.ErrEmptyMessage):
		return &apiError{http.StatusBadRequest, codeBadRequest, err.Error()}
	case errors.Is(err, core.ErrBadHistory):
		return &apiError{http.StatusBadRequest, codeInvalidHistory, err.Error()}
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &apiError{http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the body is larger than %d bytes", tooLarge.Limit)}
	}
	if unavailable(err) {
		return &apiError{http.StatusServiceUnavailable, codeUnavailable, err.Error()}
	}
	return &apiError{http.StatusInternalServerError, codeInternal, err.Error()}
}

// writeError writes err as {"error": {"code", "message"}}. What the client
// reads names no file of the server's and carries no driver's words: an
// internal or unavailable error is logged in full and answered in general
// terms (503 with Retry-After while the store is unavailable).
func writeError(w http.ResponseWriter, err error) {
	e := classify(err)
	msg := e.msg
	ew := serverWriter(w)
	switch e.code {
	case codeInternal, codeUnavailable:
		if ew != nil {
			ew.s.logf("error %d %s: %v", e.status, e.code, err)
		}
		msg = describeInternal(e.status)
		if e.code == codeUnavailable {
			w.Header().Set("Retry-After", retryAfterSeconds)
		}
	default:
		if ew != nil {
			msg = ew.s.scrubPaths(msg)
		}
	}
	writeJSON(w, e.status, map[string]any{"error": map[string]string{"code": e.code, "message": msg}})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
