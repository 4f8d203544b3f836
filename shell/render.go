package shell

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// RequestRenderer is a ModelProvider that can say what it sends for a
// request without sending it. What the model saw at a recorded step is
// then always derivable: the step's core.RequestModelCall, numbered as
// the run numbered it (RenderModelCall), rendered by the provider of its
// role (stepwise show --step N --request, GET
// /v1/runs/{id}/steps/{seq}/request).
//
// RenderRequest builds the request through the code Complete sends it
// with, so the body is the same bytes an attempt of Complete sends for
// req; it contacts no one. Secrets are never in what it returns: the
// headers that carry credentials hold markers instead.
type RequestRenderer interface {
	RenderRequest(req ModelRequest) (RenderedRequest, error)
}

// RenderedRequest is a request as a provider sends it.
type RenderedRequest struct {
	// Provider is the provider's name in agent files ("openai").
	Provider string `json:"provider"`
	// Method and URL are the HTTP request's (the base URL and the
	// path, with no credentials in it); both are empty for a provider
	// that makes no HTTP request (script).
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
	// Headers are the request's headers, one value each (several joined
	// by ", "), the credentials redacted: "Bearer [redacted:NAME]".
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the request body, the bytes sent: JSON for every provider.
	Body json.RawMessage `json:"body"`
}

// StepRequest is the request a recorded step's model call made.
type StepRequest struct {
	// Step is the step's seq; Role and Call are the ModelRequest's.
	Step int            `json:"step"`
	Role core.ModelRole `json:"role"`
	Call int            `json:"call"`
	RenderedRequest
}

// Errors of RenderModelCall.
var (
	// ErrNoModelCall: the step's action is not a model call. The error
	// wrapping it reads "step 3 made no model call: its action is tools
	// ...".
	ErrNoModelCall = errors.New("made no model call")
	// ErrNotRenderable: the role's provider is not a RequestRenderer.
	ErrNotRenderable = errors.New("the model provider cannot render its requests")
)

// RenderModelCall renders the request the model call of a recorded step
// made, with models and cfg, the providers and config of the agent the run
// followed at that step. The ModelRequest is the one the runner made for it (modelRequest),
// so its Call is the run's count of model calls at that step. A step whose
// action is not a model call is ErrNoModelCall, with the action described;
// a role without a provider is ErrNoProvider; a provider that is not a
// RequestRenderer is ErrNotRenderable.
func RenderModelCall(rec store.StepRecord, models map[core.ModelRole]ModelProvider, cfg core.Config) (StepRequest, error) {
	a, ok := rec.Action.(core.RequestModelCall)
	if !ok {
		what := "it is the run's start"
		if rec.Action != nil {
			what = "its action is " + core.DescribeAction(rec.Action)
		}
		return StepRequest{}, fmt.Errorf("step %d %w: %s", rec.Seq, ErrNoModelCall, what)
	}
	p := models[a.Role]
	if p == nil {
		return StepRequest{}, fmt.Errorf("step %d: %w %s", rec.Seq, ErrNoProvider, a.Role)
	}
	r, ok := p.(RequestRenderer)
	if !ok {
		return StepRequest{}, fmt.Errorf("step %d: %w (%T)", rec.Seq, ErrNotRenderable, p)
	}
	req := modelRequest(cfg, a, rec.State)
	out, err := r.RenderRequest(req)
	if err != nil {
		return StepRequest{}, fmt.Errorf("step %d: render the %s model's request: %w", rec.Seq, a.Role, err)
	}
	return StepRequest{Step: rec.Seq, Role: req.Role, Call: req.Call, RenderedRequest: out}, nil
}

// modelRequest is the request the runner makes of a model call: next is
// the state the call's action leads to (core.Action.Next, the state
// checkpointed with it), whose count of model calls numbers the call.
func modelRequest(cfg core.Config, a core.RequestModelCall, next core.State) ModelRequest {
	req := ModelRequest{Role: a.Role, Call: next.Counters.ModelCalls, Messages: a.Messages, Tools: a.Tools}
	if cfg.Output != nil && a.Role == core.Primary && next.Phase != core.PhaseCompact {
		req.OutputSchema = cfg.Output.Schema
	}
	return req
}
