package core

import (
	"fmt"
	"strings"
)

// Start validates cfg (see Compile) and returns the first state of a run for
// req: from its Input, or from the message history req.Messages (checked:
// ErrBadHistory, see startHistory), which it moves into the state. The
// system message holds the agent's prompt and, for text formats, the tool
// documentation generated from the schemas (see ToolDocs). The input is
// made valid UTF-8 (invalid bytes become U+FFFD), as every result is.
func Start(cfg Config, req Request) (State, error) {
	comp, err := cfg.compile(cfg.Formats()) // validates cfg
	if err != nil {
		return State{}, err
	}
	cfg.compiled = comp
	history := req.Messages
	req.Messages, req.History = nil, 0
	req.Input = clean(req.Input)
	st := State{Version: StateVersion, Request: req, Phase: PhaseModel}
	if history != nil {
		if req.Input != "" {
			return State{}, fmt.Errorf("%w: a run starts from an input or from a history, not both", ErrBadHistory)
		}
		if st, err = startHistory(cfg, st, history); err != nil { // conversation.go
			return State{}, err
		}
		return st, nil
	}
	if sys := systemPrompt(cfg); sys != "" {
		st = appendMessages(st, Message{Role: RoleSystem, Content: sys})
	}
	if cfg.Memory.Recall {
		st.Phase = PhaseRecall // the user message follows the recalled memory
		return st, nil
	}
	return appendMessages(st, Message{Role: RoleUser, Content: req.Input}), nil
}

func systemPrompt(cfg Config) string {
	parts := make([]string, 0, 2)
	if p := strings.TrimSpace(cfg.SystemPrompt); p != "" {
		parts = append(parts, p)
	}
	if docs := ToolDocs(cfg); docs != "" {
		parts = append(parts, docs)
	}
	if docs := outputDocs(cfg); docs != "" {
		parts = append(parts, docs)
	}
	return strings.Join(parts, "\n\n")
}
