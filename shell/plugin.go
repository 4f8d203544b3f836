package shell

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// ModelRequest is one chat-completion request.
type ModelRequest struct {
	// Role is the core's model role (primary or helper).
	Role core.ModelRole
	// Call is the 1-based ordinal of this model call in the run (all roles),
	// taken from the checkpointed state, so it is the same after a crash.
	Call int
	// Messages is the conversation, system message first.
	Messages []core.Message
	// Tools are sent natively (OpenAI "tools") when non-empty.
	Tools []core.Tool
	// OutputSchema, when set, is the JSON Schema the final answer must
	// fit (the agent's [output]): a provider with native structured output
	// asks the model for it (chat completions' json_schema response
	// format, the Responses API's text format, Anthropic's output_config);
	// the core checks the answer whatever the provider did.
	OutputSchema json.RawMessage
	// OnDelta, when set, is told of the reply as it streams in, piece by
	// piece, on the goroutine that called Complete; it must return
	// quickly. It only shows progress: the reply is what Complete
	// returns. A provider that does not stream never calls it.
	OnDelta func(ModelDelta)
	// OnRetry, when set, is told of each retry the provider is about to
	// make, before it waits. Pieces of the reply that arrived before it
	// are void: the next attempt streams the reply from its start.
	OnRetry func(ModelRetry)
}

// DeltaKind says what a piece of a streamed reply belongs to.
type DeltaKind string

// Kinds of deltas.
const (
	DeltaText      DeltaKind = "text"      // the reply's text
	DeltaReasoning DeltaKind = "reasoning" // the model's reasoning, as far as the provider shows it
	DeltaCall      DeltaKind = "call"      // a native tool call's arguments
)

// ModelDelta is one piece of a streamed reply.
type ModelDelta struct {
	Kind DeltaKind
	Text string
	// Call is the index of the tool call in the reply (DeltaCall), and
	// Name its name, which the provider gives at least with the call's
	// first piece.
	Call int
	Name string
}

// ModelRetry is a retry a provider is about to make.
type ModelRetry struct {
	// Attempt is the attempt that failed (1 for the first).
	Attempt int
	// Wait is how long the provider waits before the next attempt.
	Wait time.Duration
	// Reason is why the attempt failed ("status 429 Too Many Requests:
	// ...", "the stream broke off: unexpected EOF").
	Reason string
}

// ModelProvider calls one configured model. It returns the model's reply, or
// an error once it has given up (after its own retries). A context error
// means the run was interrupted, not that the model failed. A provider
// that streams reports the reply's pieces and its retries through the
// request's OnDelta and OnRetry; what it returns is the assembled reply,
// the same whether it streamed or not.
type ModelProvider interface {
	Complete(ctx context.Context, req ModelRequest) (core.ModelReply, error)
}

// ErrModelPermanent marks provider errors that retrying cannot fix (401, 404,
// a malformed request); providers wrap it so callers can tell.
var ErrModelPermanent = errors.New("permanent model error")

// ErrContextOverflow marks, beside ErrModelPermanent, a provider's refusal
// of a request as longer than the model's context window (OpenAI's
// context_length_exceeded, Anthropic's "prompt is too long"): the runner
// hands it to the core as ModelReply.Overflow, which compacts the
// conversation and asks again, once.
var ErrContextOverflow = errors.New("the request is longer than the model's context")

// RunContext identifies the run and step a tool call belongs to. Tools that
// ask for it receive it (for example as environment variables).
type RunContext struct {
	RunID string
	Step  int
	Agent string
	// View is the part of the run the tool declared it wants to see
	// (ToolSettings.View); nil when it declared none.
	View *RunView
	// Progress, when set, receives the call's progress reports (use
	// Report). A tool may report from any goroutine until Run returns.
	Progress func(ToolProgress)
}

// Tool is a tool the shell runs itself. Run never returns a Go error: a
// failure (bad input, timeout, crash, non-zero exit) is a ToolResult with
// Error set, which the model sees. Run must honour ctx: when it is done the
// tool stops its work (and any child processes) and returns promptly.
type Tool interface {
	// Spec describes the tool to the core: name, description, JSON Schema
	// of the arguments, and whether re-running it after a crash is safe.
	Spec() core.Tool
	Run(ctx context.Context, call core.ToolCall, rc RunContext) core.ToolResult
}
