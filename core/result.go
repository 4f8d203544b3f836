package core

// Result is the outcome of a request, handed to Resume. It is a closed set:
// ModelReply, ToolResults, MemoryHits, MemoryCreated, MemoryTraversed,
// UserMessage and Cancelled.
type Result interface{ isResult() }

// ModelReply is what a model answered. Error is set when the provider gave up
// (after its retries); the run then fails with FailModelError.
type ModelReply struct {
	Text         string       `cbor:"1,keyasint,omitempty" json:"text,omitempty"`
	Calls        []NativeCall `cbor:"2,keyasint,omitempty" json:"tool_calls,omitempty"`
	FinishReason string       `cbor:"3,keyasint,omitempty" json:"finish_reason,omitempty"`
	Usage        Usage        `cbor:"4,keyasint,omitempty" json:"usage,omitzero"`
	Error        string       `cbor:"5,keyasint,omitempty" json:"error,omitempty"`
	// Opaque is the provider's own data about the reply, which the core
	// keeps with the assistant message for the provider's later requests.
	Opaque *Opaque `cbor:"6,keyasint,omitempty" json:"opaque,omitempty"`
	// Overflow marks an Error that is the provider refusing the request as
	// longer than the model's context: the core compacts the conversation
	// and makes the request again, once (context.go).
	Overflow bool `cbor:"7,keyasint,omitempty" json:"context_overflow,omitempty"`
}

// NativeCall is a structured tool call as the model sent it. Arguments is the
// raw JSON text, which may be malformed.
type NativeCall struct {
	ID        string `cbor:"1,keyasint,omitempty" json:"id,omitempty"`
	Name      string `cbor:"2,keyasint,omitempty" json:"name"`
	Arguments string `cbor:"3,keyasint,omitempty" json:"arguments"`
}

// Usage is the token count of one model call.
type Usage struct {
	PromptTokens     int `cbor:"1,keyasint,omitempty" json:"prompt_tokens,omitempty"`
	CompletionTokens int `cbor:"2,keyasint,omitempty" json:"completion_tokens,omitempty"`
	// CachedTokens are the prompt tokens the provider read from its cache
	// (part of PromptTokens); ReasoningTokens are the completion tokens
	// the model spent reasoning (part of CompletionTokens).
	CachedTokens    int `cbor:"3,keyasint,omitempty" json:"cached_tokens,omitempty"`
	ReasoningTokens int `cbor:"4,keyasint,omitempty" json:"reasoning_tokens,omitempty"`
}

// ToolResults answers a RequestToolCalls or RequestExternalToolCalls, in any order.
type ToolResults struct {
	Results []ToolResult `cbor:"1,keyasint" json:"results"`
}

// ToolResult is the outcome of one call: Output, or Error when it failed. A
// failed call is data the model sees, not the end of the run.
type ToolResult struct {
	CallID string `cbor:"1,keyasint,omitempty" json:"tool_call_id"`
	Output string `cbor:"2,keyasint,omitempty" json:"result,omitempty"`
	Error  string `cbor:"3,keyasint,omitempty" json:"error,omitempty"`
	// Sources are references the output came from (URLs, paths).
	Sources []string `cbor:"4,keyasint,omitempty" json:"sources,omitempty"`
	// Attachments are binary content for the model (images, sounds); the
	// output holds a text placeholder for each (see Attachment).
	Attachments []Attachment `cbor:"5,keyasint,omitempty" json:"attachments,omitempty"`
	// Transient marks a failure that may go away on its own (a refused
	// connection, a 5xx, a server that was restarting). The shell's retry
	// policy reads it; it is never stored and the core ignores it.
	Transient bool `cbor:"-" json:"-"`
	// Cached marks a result the shell took from its tool-result cache
	// instead of running the tool (see shell.CachePolicy). It is recorded
	// with the result, so stats and traces can tell, and a replay, which
	// feeds the recorded results, sees it too. The core ignores it.
	Cached bool `cbor:"6,keyasint,omitempty" json:"cached,omitempty"`
	// Spent is what the call spent of the budgets: a sub-agent's child run
	// reports its tokens, cost and tool calls, which the parent counts as
	// its own (budgets span the tree; ADR 0034).
	Spent *Spent `cbor:"7,keyasint,omitempty" json:"spent,omitempty"`
}

// Spent is what a call spent of the budgets a run counts.
type Spent struct {
	PromptTokens     int   `cbor:"1,keyasint,omitempty" json:"prompt_tokens,omitempty"`
	CompletionTokens int   `cbor:"2,keyasint,omitempty" json:"completion_tokens,omitempty"`
	Cost             int64 `cbor:"3,keyasint,omitempty" json:"cost,omitempty"`
	ToolCalls        int   `cbor:"4,keyasint,omitempty" json:"tool_calls,omitempty"`
}

// Failed reports whether the call failed.
func (r ToolResult) Failed() bool { return r.Error != "" }

// MemoryHits answers a RequestMemorySearch, best first.
type MemoryHits struct {
	Hits  []MemoryHit `cbor:"1,keyasint,omitempty" json:"hits"`
	Error string      `cbor:"2,keyasint,omitempty" json:"error,omitempty"`
}

// MemoryHit is one search hit.
type MemoryHit struct {
	Entity Entity  `cbor:"1,keyasint" json:"entity"`
	Score  float64 `cbor:"2,keyasint,omitempty" json:"score,omitempty"`
}

// MemoryCreated answers a RequestMemoryCreate.
type MemoryCreated struct {
	Entities  []string `cbor:"1,keyasint,omitempty" json:"entities,omitempty"`
	Relations int      `cbor:"2,keyasint,omitempty" json:"relations,omitempty"`
	Error     string   `cbor:"3,keyasint,omitempty" json:"error,omitempty"`
}

// MemoryTraversed answers a RequestMemoryTraverse.
type MemoryTraversed struct {
	Entities  []Entity   `cbor:"1,keyasint,omitempty" json:"entities,omitempty"`
	Relations []Relation `cbor:"2,keyasint,omitempty" json:"relations,omitempty"`
	Error     string     `cbor:"3,keyasint,omitempty" json:"error,omitempty"`
}

// Cancelled ends the run at whatever request is pending. On a run that
// answered and waits for the user's next message, it closes the
// conversation: the run ends cancelled, its last answer kept.
type Cancelled struct {
	Reason string `cbor:"1,keyasint,omitempty" json:"reason,omitempty"`
}

// UserMessage is the user's next message in the run's conversation. It
// answers no request: Resume takes it whenever the run has not ended for
// good (see conversation.go). A run that answered begins a new user turn
// with it; a run at work queues it, or with OnInterrupt ends the turn in
// flight for it.
type UserMessage struct {
	Content string `cbor:"1,keyasint,omitempty" json:"content"`
}

func (ModelReply) isResult()      {}
func (UserMessage) isResult()     {}
func (ToolResults) isResult()     {}
func (MemoryHits) isResult()      {}
func (MemoryCreated) isResult()   {}
func (MemoryTraversed) isResult() {}
func (Cancelled) isResult()       {}
