package core

import "encoding/json"

// Action is what Step decides. It is a closed set: Complete, Fail,
// RequestModelCall, RequestToolCalls, RequestExternalToolCalls,
// RequestMemorySearch, RequestMemoryCreate and RequestMemoryTraverse.
// Switch over it exhaustively.
//
// Next returns the continuation state. For a request it records the pending
// request and must be saved before the request is performed; for Complete and
// Fail it is the final state of the run.
type Action interface {
	Next() State
	isAction()
}

// Complete ends the run with an answer.
type Complete struct {
	Answer    string   `cbor:"1,keyasint,omitempty" json:"answer"`
	ToolsUsed []string `cbor:"2,keyasint,omitempty" json:"tools_used"`
	Sources   []string `cbor:"3,keyasint,omitempty" json:"sources"`
	// Output is the answer as a JSON value, for an agent with an output
	// schema (output.go): the canonical JSON Answer holds. It is not
	// encoded (Answer holds the same bytes); Step sets it.
	Output json.RawMessage `cbor:"-" json:"output,omitempty"`
	State  State           `cbor:"-" json:"-"`
}

// Fail ends the run without an answer.
type Fail struct {
	Code   FailCode `cbor:"1,keyasint" json:"code"`
	Reason string   `cbor:"2,keyasint" json:"reason"`
	State  State    `cbor:"-" json:"-"`
}

// RequestModelCall asks the shell to call a model with these messages. Tools
// is set when the model should receive the tools natively (native and auto
// formats); for text formats the tool docs are in the system message.
type RequestModelCall struct {
	Role     ModelRole `cbor:"1,keyasint" json:"role"`
	Messages []Message `cbor:"2,keyasint,omitempty" json:"messages"`
	Tools    []Tool    `cbor:"3,keyasint,omitempty" json:"tools,omitempty"`
	State    State     `cbor:"-" json:"-"`
}

// RequestToolCalls asks the shell to run internal (and MCP) tool calls: a
// run of them that the model wrote one after the other (an external call
// between two internal ones separates them: see nextBatch). Results go back
// in one ToolResults; with Parallel the calls may run concurrently, with
// StopOnError the shell may stop after the first failed call and leave the
// later ones out.
type RequestToolCalls struct {
	Calls       []ToolCall `cbor:"1,keyasint" json:"calls"`
	Parallel    bool       `cbor:"2,keyasint,omitempty" json:"parallel,omitempty"`
	StopOnError bool       `cbor:"3,keyasint,omitempty" json:"stop_on_error,omitempty"`
	State       State      `cbor:"-" json:"-"`
}

// RequestExternalToolCalls pauses the run: the caller runs the calls (a run
// of external calls the model wrote one after the other) and resumes with a
// ToolResults answering every call id once. The turn's calls written after
// them run once they are answered; a helpers program may pause several
// times in one turn.
type RequestExternalToolCalls struct {
	Calls []ToolCall `cbor:"1,keyasint" json:"calls"`
	State State      `cbor:"-" json:"-"`
}

// RequestMemorySearch asks for a full-text search of the agent's memory.
type RequestMemorySearch struct {
	CallID    string `cbor:"1,keyasint,omitempty" json:"call_id,omitempty"` // empty for recall
	Namespace string `cbor:"2,keyasint" json:"namespace"`
	Query     string `cbor:"3,keyasint" json:"query"`
	Limit     int    `cbor:"4,keyasint" json:"limit"`
	State     State  `cbor:"-" json:"-"`
}

// RequestMemoryCreate asks to store entities and relations.
type RequestMemoryCreate struct {
	CallID    string     `cbor:"1,keyasint" json:"call_id"`
	Namespace string     `cbor:"2,keyasint" json:"namespace"`
	Entities  []Entity   `cbor:"3,keyasint,omitempty" json:"entities"`
	Relations []Relation `cbor:"4,keyasint,omitempty" json:"relations"`
	State     State      `cbor:"-" json:"-"`
}

// RequestMemoryTraverse asks for the entities reachable from From by
// relations of type Relation (any type when empty), up to Depth hops.
type RequestMemoryTraverse struct {
	CallID    string `cbor:"1,keyasint" json:"call_id"`
	Namespace string `cbor:"2,keyasint" json:"namespace"`
	From      string `cbor:"3,keyasint" json:"from"`
	Relation  string `cbor:"4,keyasint,omitempty" json:"relation,omitempty"`
	Depth     int    `cbor:"5,keyasint" json:"depth"`
	State     State  `cbor:"-" json:"-"`
}

// Entity is a named memory node with observations.
type Entity struct {
	Name         string   `cbor:"1,keyasint" json:"name"`
	Type         string   `cbor:"2,keyasint,omitempty" json:"type,omitempty"`
	Observations []string `cbor:"3,keyasint,omitempty" json:"observations,omitempty"`
}

// Relation is a typed edge between two entities.
type Relation struct {
	From string `cbor:"1,keyasint" json:"from"`
	To   string `cbor:"2,keyasint" json:"to"`
	Type string `cbor:"3,keyasint" json:"type"`
}

func (a Complete) Next() State                 { return a.State }
func (a Fail) Next() State                     { return a.State }
func (a RequestModelCall) Next() State         { return a.State }
func (a RequestToolCalls) Next() State         { return a.State }
func (a RequestExternalToolCalls) Next() State { return a.State }
func (a RequestMemorySearch) Next() State      { return a.State }
func (a RequestMemoryCreate) Next() State      { return a.State }
func (a RequestMemoryTraverse) Next() State    { return a.State }

func (Complete) isAction()                 {}
func (Fail) isAction()                     {}
func (RequestModelCall) isAction()         {}
func (RequestToolCalls) isAction()         {}
func (RequestExternalToolCalls) isAction() {}
func (RequestMemorySearch) isAction()      {}
func (RequestMemoryCreate) isAction()      {}
func (RequestMemoryTraverse) isAction()    {}
