package telemetry

import (
	"bytes"
	"encoding/json"

	"github.com/stepwise-agent/stepwise/core"
)

// Message content, recorded only when Options.Content is set, follows the
// GenAI conventions' JSON schemas for gen_ai.input.messages,
// gen_ai.output.messages and gen_ai.system_instructions, as JSON strings
// (the conventions allow a string where a backend takes no structured
// attribute).

type chatMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// part is one of the schemas' parts: text, tool_call or
// tool_call_response.
type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
}

// inputMessages splits a model request's messages into the system
// instructions and the chat history, each as JSON ("" when empty).
func inputMessages(msgs []core.Message) (system, input string) {
	var sys []part
	history := []chatMessage{}
	for _, m := range msgs {
		switch m.Role {
		case core.RoleSystem:
			sys = append(sys, part{Type: "text", Content: m.Content})
		case core.RoleTool:
			history = append(history, chatMessage{Role: "tool", Parts: []part{{Type: "tool_call_response", ID: m.CallID, Response: m.Content}}})
		default:
			cm := chatMessage{Role: string(m.Role), Parts: []part{}}
			if m.Content != "" || len(m.Calls) == 0 {
				cm.Parts = append(cm.Parts, part{Type: "text", Content: m.Content})
			}
			for _, c := range m.Calls {
				cm.Parts = append(cm.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: arguments(c.Args)})
			}
			history = append(history, cm)
		}
	}
	if len(sys) > 0 {
		system = marshal(sys)
	}
	if len(history) > 0 {
		input = marshal(history)
	}
	return system, input
}

// outputMessages is a model reply as the one output message it is.
func outputMessages(r core.ModelReply) string {
	m := chatMessage{Role: "assistant", Parts: []part{}, FinishReason: finishReason(r)}
	if r.Text != "" || len(r.Calls) == 0 {
		m.Parts = append(m.Parts, part{Type: "text", Content: r.Text})
	}
	for _, c := range r.Calls {
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: arguments([]byte(c.Arguments))})
	}
	return marshal([]chatMessage{m})
}

// textMessage is one message of one text part, as JSON.
func textMessage(role, text, finish string) string {
	return marshal([]chatMessage{{Role: role, Parts: []part{{Type: "text", Content: text}}, FinishReason: finish}})
}

// finishReason maps a provider's finish reason to the schema's enum.
func finishReason(r core.ModelReply) string {
	switch {
	case r.Error != "":
		return "error"
	case r.FinishReason == "tool_calls" || r.FinishReason == "tool_use" || (r.FinishReason == "" && len(r.Calls) > 0):
		return "tool_call"
	case r.FinishReason == "length" || r.FinishReason == "max_tokens":
		return "length"
	case r.FinishReason == "content_filter":
		return "content_filter"
	}
	return "stop"
}

// arguments is a call's arguments as a JSON object when they are JSON,
// else as the text the model wrote.
func arguments(b []byte) any {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	return string(b)
}

// marshal encodes v without HTML escaping; the values here always encode.
func marshal(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
