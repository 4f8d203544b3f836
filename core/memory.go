package core

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AllNamespaces is the namespace of a memory search over every namespace
// (memory_search with global: true); no agent's namespace may be it.
const AllNamespaces = "*"

// The memory built-ins, added to an agent's tools when Memory.Tools is set.
const (
	ToolMemorySearch   = "memory_search"
	ToolMemoryCreate   = "memory_create"
	ToolMemoryTraverse = "memory_traverse"
)

var memoryTools = []Tool{
	{
		Name:        ToolMemorySearch,
		Description: "Search long-term memory by full text. Returns the best matching entities with their observations.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"words to search for"},"limit":{"type":"integer","minimum":1,"maximum":50,"default":5,"description":"how many hits at most"},"global":{"type":"boolean","description":"search the memory of every agent, not only this one's"}},"required":["query"],"additionalProperties":false}`),
		Idempotent:  true,
	},
	{
		Name:        ToolMemoryCreate,
		Description: "Store entities (with observations) and typed relations between entities in long-term memory.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","minLength":1},"type":{"type":"string"},"observations":{"type":"array","items":{"type":"string"}}},"required":["name"],"additionalProperties":false}},"relations":{"type":"array","items":{"type":"object","properties":{"from":{"type":"string","minLength":1},"to":{"type":"string","minLength":1},"type":{"type":"string","minLength":1}},"required":["from","to","type"],"additionalProperties":false}}},"additionalProperties":false}`),
	},
	{
		Name:        ToolMemoryTraverse,
		Description: "Follow relations in long-term memory from an entity, to a depth. Returns the entities and relations reached.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"from":{"type":"string","minLength":1,"description":"entity name to start from"},"relation":{"type":"string","description":"only follow relations of this type"},"depth":{"type":"integer","minimum":1,"maximum":5,"default":1,"description":"how many hops"}},"required":["from"],"additionalProperties":false}`),
		Idempotent:  true,
	},
}

func memoryKind(tool string) (PendingKind, bool) {
	switch tool {
	case ToolMemorySearch:
		return PendingMemorySearch, true
	case ToolMemoryCreate:
		return PendingMemoryCreate, true
	case ToolMemoryTraverse:
		return PendingMemoryTraverse, true
	}
	return "", false
}

type memoryArgs struct {
	Query     string     `json:"query"`
	Limit     int        `json:"limit"`
	Global    bool       `json:"global"`
	Entities  []Entity   `json:"entities"`
	Relations []Relation `json:"relations"`
	From      string     `json:"from"`
	Relation  string     `json:"relation"`
	Depth     int        `json:"depth"`
}

// decodeMemoryArgs reads the validated arguments of a memory call and checks
// what the schema alone cannot (a create that stores nothing).
func decodeMemoryArgs(c ToolCall) (memoryArgs, error) {
	var a memoryArgs
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return a, fmt.Errorf("%s: arguments do not fit the tool: %v", c.Name, err)
	}
	switch c.Name {
	case ToolMemorySearch:
		if strings.TrimSpace(a.Query) == "" {
			return a, fmt.Errorf("%s: query is empty", c.Name)
		}
		a.Limit = pick(a.Limit, 5)
	case ToolMemoryCreate:
		if len(a.Entities) == 0 && len(a.Relations) == 0 {
			return a, fmt.Errorf("%s: give at least one entity or relation", c.Name)
		}
	case ToolMemoryTraverse:
		if strings.TrimSpace(a.From) == "" {
			return a, fmt.Errorf("%s: from is empty", c.Name)
		}
		a.Depth = pick(a.Depth, 1)
	}
	return a, nil
}

func memoryAction(cfg Config, st State, c ToolCall) (Action, error) {
	a, err := decodeMemoryArgs(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	ns := cfg.namespace()
	switch c.Name {
	case ToolMemorySearch:
		if a.Global {
			ns = AllNamespaces
		}
		return RequestMemorySearch{CallID: c.ID, Namespace: ns, Query: a.Query, Limit: a.Limit, State: st}, nil
	case ToolMemoryCreate:
		return RequestMemoryCreate{CallID: c.ID, Namespace: ns, Entities: a.Entities, Relations: a.Relations, State: st}, nil
	case ToolMemoryTraverse:
		return RequestMemoryTraverse{CallID: c.ID, Namespace: ns, From: a.From, Relation: a.Relation, Depth: a.Depth, State: st}, nil
	}
	return nil, fmt.Errorf("%w: %q is not a memory tool", ErrBadState, c.Name)
}

// resumeMemory folds in a memory result: recall goes before the user's input,
// a memory tool call is answered like any other call.
func resumeMemory(cfg Config, st State, res Result) (State, error) {
	p := st.Pending
	var out ToolResult
	switch r := res.(type) {
	case MemoryHits:
		if p.Kind != PendingMemorySearch {
			return st, wrongKind(p, res)
		}
		if len(p.CallIDs) == 0 {
			return recalled(st, r), nil
		}
		out = ToolResult{Output: jsonText(r.Hits), Error: r.Error}
	case MemoryCreated:
		if p.Kind != PendingMemoryCreate {
			return st, wrongKind(p, res)
		}
		out = ToolResult{Output: jsonText(r), Error: r.Error}
	case MemoryTraversed:
		if p.Kind != PendingMemoryTraverse {
			return st, wrongKind(p, res)
		}
		out = ToolResult{Output: jsonText(MemoryTraversed{Entities: r.Entities, Relations: r.Relations}), Error: r.Error}
	default:
		return st, wrongKind(p, res)
	}
	if out.Error != "" {
		out.Output = ""
	}
	out.CallID = p.CallIDs[0]
	return answerCalls(cfg, st, []ToolResult{out})
}

func recalled(st State, r MemoryHits) State {
	st.Pending = nil
	st.Phase = PhaseModel
	if r.Error == "" && len(r.Hits) > 0 {
		var b strings.Builder
		b.WriteString("Relevant memory:")
		for _, h := range r.Hits {
			fmt.Fprintf(&b, "\n- %s", h.Entity.Name)
			if h.Entity.Type != "" {
				fmt.Fprintf(&b, " (%s)", h.Entity.Type)
			}
			if len(h.Entity.Observations) > 0 {
				b.WriteString(": " + strings.Join(h.Entity.Observations, "; "))
			}
		}
		st = appendMessages(st, Message{Role: RoleSystem, Content: b.String()})
	}
	return appendMessages(st, Message{Role: RoleUser, Content: st.Request.Input})
}

// jsonText renders v as compact JSON for the model; v is always one of the
// memory result types, which cannot fail to marshal.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
