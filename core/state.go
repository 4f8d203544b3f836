package core

import "encoding/json"

// StateVersion is the format version written into every State. Decoding a
// state with a higher version fails with ErrNewerVersion.
const StateVersion = 1

// Phase is where a run stands between two decisions.
type Phase string

// The phases of a run.
const (
	PhaseRecall   Phase = "recall"   // search memory for the input before the first model call
	PhaseModel    Phase = "model"    // ask the primary model
	PhaseEscalate Phase = "escalate" // ask the helper model for a plan
	PhaseTools    Phase = "tools"    // run the calls of the current turn
	PhaseFinal    Phase = "final"    // ask the primary once more for an answer, without tools (limits.go)
	PhaseCompact  Phase = "compact"  // ask for a summary of the earlier conversation (context.go)
	PhaseDone     Phase = "done"     // completed with an answer
	PhaseFailed   Phase = "failed"   // failed with a code and reason
)

// Role is the author of a message.
type Role string

// Message roles, as in the OpenAI chat format.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ModelRole selects which configured model a RequestModelCall goes to.
type ModelRole string

// Model roles.
const (
	Primary ModelRole = "primary"
	Helper  ModelRole = "helper"
)

// Request is what a run was started with: one input, or a message history
// (see Start).
type Request struct {
	// Input is the user's message. A run started from a history holds its
	// last user message here.
	Input string `cbor:"1,keyasint,omitempty" json:"input"`
	// History is how many messages the history a run started from held
	// (0: it started from Input).
	History int `cbor:"2,keyasint,omitempty" json:"history,omitempty"`
	// Messages is a history to start from instead of Input, in the OpenAI
	// chat format's roles (see Start). Start moves it into the state's
	// messages; it is never stored in the Request.
	Messages []Message `cbor:"-" json:"messages,omitempty"`
}

// Message is one entry of the conversation.
type Message struct {
	Role    Role   `cbor:"1,keyasint,omitempty" json:"role"`
	Content string `cbor:"2,keyasint,omitempty" json:"content,omitempty"`
	// Calls are the native tool calls of an assistant message.
	Calls []ToolCall `cbor:"3,keyasint,omitempty" json:"calls,omitempty"`
	// CallID and Name identify the call a tool message answers.
	CallID string `cbor:"4,keyasint,omitempty" json:"call_id,omitempty"`
	Name   string `cbor:"5,keyasint,omitempty" json:"name,omitempty"`
	// IsError marks a tool message whose call failed: Content is the
	// tool's error text, verbatim.
	IsError bool `cbor:"6,keyasint,omitempty" json:"is_error,omitempty"`
	// Attachments are the binary content of the tool results the message
	// carries (see Attachment); Content holds their text placeholders.
	Attachments []Attachment `cbor:"7,keyasint,omitempty" json:"attachments,omitempty"`
	// Opaque is what the model provider keeps with an assistant message
	// for its own later requests (see Opaque).
	Opaque *Opaque `cbor:"8,keyasint,omitempty" json:"opaque,omitempty"`
}

// Opaque is data a model provider returns with a reply and needs back with
// the conversation on its later requests: reasoning items, signed thinking
// blocks. The core copies it from a ModelReply to the assistant message it
// makes of the reply and stores it; it never reads it. A provider uses only
// data it recognises by name, so a run whose agent switches providers
// carries on without it.
type Opaque struct {
	// Provider names the provider that wrote Data ("openai-responses",
	// "anthropic").
	Provider string `cbor:"1,keyasint,omitempty" json:"provider"`
	Data     []byte `cbor:"2,keyasint,omitempty" json:"data"`
}

// ToolCall is a call the model asked for. Args is canonical JSON (sorted keys,
// no insignificant space) once the call has been validated.
type ToolCall struct {
	ID   string          `cbor:"1,keyasint,omitempty" json:"id"`
	Name string          `cbor:"2,keyasint,omitempty" json:"name"`
	Args json.RawMessage `cbor:"3,keyasint,omitempty" json:"arguments"`
	// Raw is the text the call was parsed from: the <tool> block, the
	// fenced block, the call object, or the helpers statement (for a call
	// whose arguments use results, the statement as written: Args holds the
	// values it computed). It is empty for native calls, which were not
	// parsed from text: the arguments as sent are kept in the assistant
	// message (ADR 0016).
	Raw string `cbor:"4,keyasint,omitempty" json:"raw,omitempty"`
}

// State is everything needed to continue a run. It holds no live handles and
// round-trips through CBOR byte for byte (see EncodeState).
type State struct {
	Version  int       `cbor:"1,keyasint"`
	Request  Request   `cbor:"2,keyasint"`
	Phase    Phase     `cbor:"3,keyasint"`
	Messages []Message `cbor:"4,keyasint,omitempty"`
	// Pending is the request the run is waiting on; nil between decisions.
	Pending *Pending `cbor:"5,keyasint,omitempty"`
	// Turn holds the calls of the model turn being executed.
	Turn     *Turn    `cbor:"6,keyasint,omitempty"`
	Counters Counters `cbor:"7,keyasint"`
	// ToolsUsed lists tool names in first-use order.
	ToolsUsed []string `cbor:"8,keyasint,omitempty"`
	// Sources lists the sources tools reported, first-seen order, no repeats.
	Sources []string `cbor:"9,keyasint,omitempty"`
	Answer  string   `cbor:"10,keyasint,omitempty"`
	Failure *Failure `cbor:"11,keyasint,omitempty"`
	// Escalation is why the helper is being asked (PhaseEscalate).
	Escalation string `cbor:"12,keyasint,omitempty"`
	// Recent remembers the run's recent calls for cycle and progress
	// detection; nil unless the agent has Cycles or Collaboration (cycle.go).
	Recent *CallLog `cbor:"13,keyasint,omitempty"`
	// ToolsOK lists the tools a call of which succeeded, in the order they
	// first did: what citations name when the tools reported no sources (a
	// tool whose every call failed is no source).
	ToolsOK []string `cbor:"14,keyasint,omitempty"`
	// Conv is where the run's conversation stands once the user sent a
	// message after its start (nil until then; see conversation.go).
	Conv *Conversation `cbor:"15,keyasint,omitempty"`
	// Ctx is where context compaction stands (context.go); nil unless the
	// agent bounds its requests.
	Ctx *ContextState `cbor:"16,keyasint,omitempty"`
	// Structured is set when Answer is a JSON value that fit the agent's
	// output schema (output.go).
	Structured bool `cbor:"17,keyasint,omitempty"`
}

// Conversation is the run's conversation beyond its first user turn. A
// user turn begins with a user message and ends with the run's answer to
// it; the limits count per user turn from Base (see conversation.go).
type Conversation struct {
	// Turn numbers the user turn in progress (or last answered): the
	// first is 1.
	Turn int `cbor:"1,keyasint,omitempty"`
	// Input is the message that began it.
	Input string `cbor:"2,keyasint,omitempty"`
	// Queue holds the messages the user sent while the run worked, in the
	// order they came: they are delivered before the next call to the
	// primary model.
	Queue []string `cbor:"3,keyasint,omitempty"`
	// Base is the counters when the turn began.
	Base Counters `cbor:"4,keyasint,omitempty"`
	// At is the index of Input in the messages: a compacted view keeps
	// it (context.go).
	At int `cbor:"5,keyasint,omitempty"`
}

// Counters are the run's running totals, used by the limits.
type Counters struct {
	// Steps counts the requests the run has made, what Limits.MaxSteps
	// bounds; it is not a step's seq (see "Steps" in the package doc).
	Steps            int `cbor:"1,keyasint,omitempty"`
	ModelCalls       int `cbor:"2,keyasint,omitempty"`
	Corrections      int `cbor:"3,keyasint,omitempty"` // consecutive invalid replies
	Escalations      int `cbor:"4,keyasint,omitempty"`
	Repeats          int `cbor:"5,keyasint,omitempty"` // identical calls in a row
	PromptTokens     int `cbor:"6,keyasint,omitempty"`
	CompletionTokens int `cbor:"7,keyasint,omitempty"`
	// Bytes approximates the state's size; it grows with every message.
	Bytes int `cbor:"8,keyasint,omitempty"`
	// LastCall is the fingerprint of the most recent call (loop detection).
	LastCall string `cbor:"9,keyasint,omitempty"`
	// LowQuality counts consecutive primary replies scored below the
	// collaboration threshold (quality.go).
	LowQuality int `cbor:"10,keyasint,omitempty"`
	// ToolCalls counts the calls accepted to run, kept while the agent has
	// Budget.MaxToolCalls (budget.go).
	ToolCalls int `cbor:"11,keyasint,omitempty"`
	// Cost is what the model calls cost, in picounits (10^-12 of the
	// prices' currency), kept while the agent has prices (budget.go).
	Cost int64 `cbor:"12,keyasint,omitempty"`
	// Compactions counts the summaries asked for (context.go): model
	// calls that are not the primary's turns.
	Compactions int `cbor:"13,keyasint,omitempty"`
}

// PendingKind is the kind of result a run waits for.
type PendingKind string

// Pending kinds, one per request action.
const (
	PendingModel          PendingKind = "model"
	PendingTools          PendingKind = "tools"
	PendingExternal       PendingKind = "external"
	PendingMemorySearch   PendingKind = "memory_search"
	PendingMemoryCreate   PendingKind = "memory_create"
	PendingMemoryTraverse PendingKind = "memory_traverse"
)

// Pending records the request a run waits on: enough to re-issue it exactly
// and to check that a result fits it.
type Pending struct {
	Kind PendingKind `cbor:"1,keyasint"`
	Role ModelRole   `cbor:"2,keyasint,omitempty"`
	// CallIDs are the calls expected back, in the model's order. A memory
	// request made by a tool call has one; recall has none.
	CallIDs []string `cbor:"3,keyasint,omitempty"`
}

// Turn is the validated calls of one model turn and their results so far.
type Turn struct {
	Calls   []ToolCall   `cbor:"1,keyasint"`
	Results []ToolResult `cbor:"2,keyasint"` // aligned with Calls; CallID empty until answered
	// Stopped is set when stop-on-error skipped the rest of the turn.
	Stopped bool `cbor:"3,keyasint,omitempty"`
	// Native is set when the calls were native tool calls: their results go
	// back as tool messages rather than as text.
	Native bool `cbor:"4,keyasint,omitempty"`
	// Program is set when the turn interprets a helpers program (statements
	// that use results): Calls then grows as the program reaches its calls.
	Program *Program `cbor:"5,keyasint,omitempty"`
	// Parse is what the parser noticed reading the reply that made the
	// turn (see ParseMeta); nil when it noticed nothing.
	Parse *ParseMeta `cbor:"6,keyasint,omitempty"`
}

// ParseMeta is what a parser noticed reading a reply, recorded with the
// step whose turn the reply made: the format the auto format chose, where
// each call sat in the reply's text, and warnings.
type ParseMeta struct {
	// Format is the format auto read the reply in ("" for other formats:
	// the agent's own).
	Format Format `cbor:"1,keyasint,omitempty" json:"format,omitempty"`
	// Spans are, for each call of a text format (aligned with the turn's
	// first calls), its byte offsets in the reply's text.
	Spans []Span `cbor:"2,keyasint,omitempty" json:"spans,omitempty"`
	// Warnings are what the parser accepted but noticed.
	Warnings []string `cbor:"3,keyasint,omitempty" json:"warnings,omitempty"`
}

// Span is a range of bytes, [Start, End), of a reply's text.
type Span struct {
	Start int `cbor:"1,keyasint,omitempty" json:"start"`
	End   int `cbor:"2,keyasint,omitempty" json:"end"`
}

// Program locates the helpers program a turn interprets (ADR 0016). Its
// statements are read again from the assistant message that wrote them, and
// the program is run again from its start with the results of the calls it
// made so far (Turn.Calls and Turn.Results, in order): the bindings are
// derived, never stored, so a turn checkpointed between two calls resumes
// exactly.
type Program struct {
	// Message is the index in State.Messages of the assistant message
	// holding the <helpers> blocks.
	Message int `cbor:"1,keyasint"`
	// Step is the step the reply came in at: the n-th call statement's id
	// is call_<Step>_<n>, as for a block of literal calls.
	Step int `cbor:"2,keyasint,omitempty"`
}

// Failure is why a run failed.
type Failure struct {
	Code   FailCode `cbor:"1,keyasint"`
	Reason string   `cbor:"2,keyasint"`
}

// FailCode classifies a failed run.
type FailCode string

// Failure codes.
const (
	FailMaxSteps      FailCode = "max_steps"
	FailLoop          FailCode = "loop"
	FailInvalidOutput FailCode = "invalid_output"
	FailStateTooLarge FailCode = "state_too_large"
	FailModelError    FailCode = "model_error"
	FailCancelled     FailCode = "cancelled"
	FailMaxTurns      FailCode = "max_turns"
	FailBudget        FailCode = "budget_exhausted"
	FailCycle         FailCode = "cycle"
	FailContext       FailCode = "context_overflow"
)

// PendingCalls returns the calls of the pending request (tool calls,
// external calls, or a memory tool's call), in the model's order, each with
// the raw text it was parsed from; nil when no call is pending.
func (s State) PendingCalls() []ToolCall {
	if s.Pending == nil || s.Turn == nil {
		return nil
	}
	var out []ToolCall
	for _, id := range s.Pending.CallIDs {
		if i := s.Turn.index(id); i >= 0 {
			out = append(out, s.Turn.Calls[i])
		}
	}
	return out
}

// Done reports whether the run has ended (completed or failed).
func (s State) Done() bool { return s.Phase == PhaseDone || s.Phase == PhaseFailed }
