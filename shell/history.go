package shell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
)

// ChatMessage is a message in the OpenAI chat format: what a run can start
// from (core.Request.Messages, stepwise run --messages, POST /v1/runs with
// messages) and what GET /v1/runs/{id}/messages returns.
type ChatMessage struct {
	Role    core.Role `json:"role"`
	Content *string   `json:"content"`
	// ToolCalls are an assistant message's calls.
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers; Name its tool.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ChatToolCall is one call of an assistant message: arguments are JSON
// text, as the model wrote it.
type ChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ParseHistory reads a message history in the OpenAI chat format: a JSON
// array of messages (or an object holding one under "messages"), whose
// content is a string, null, or a list of text parts. What it cannot read
// (an unknown field of a message, a part that is not text, a call of
// another type than function) is an error naming the message; whether the
// history makes sense is core.Start's to check (core.ErrBadHistory).
func ParseHistory(data []byte) ([]core.Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var wrapped struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(data, &wrapped); err != nil || wrapped.Messages == nil {
			return nil, fmt.Errorf("%w: want a JSON array of messages (or {\"messages\": [...]})", core.ErrBadHistory)
		}
		data = wrapped.Messages
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: want a JSON array of messages: %v", core.ErrBadHistory, err)
	}
	out := make([]core.Message, len(raw))
	for i, r := range raw {
		m, err := parseChatMessage(r)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", core.ErrBadHistory, i+1, err)
		}
		out[i] = m
	}
	return out, nil
}

func parseChatMessage(raw json.RawMessage) (core.Message, error) {
	var m struct {
		Role       core.Role       `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []ChatToolCall  `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return core.Message{}, err
	}
	text, err := chatContent(m.Content)
	if err != nil {
		return core.Message{}, err
	}
	out := core.Message{Role: m.Role, Content: text, CallID: m.ToolCallID, Name: m.Name}
	if m.Role == core.RoleUser || m.Role == core.RoleSystem || m.Role == core.RoleAssistant {
		out.Name = "" // a participant's name is not kept
	}
	for _, c := range m.ToolCalls {
		if c.Type != "" && c.Type != "function" {
			return core.Message{}, fmt.Errorf("tool call %q has type %q, not function", c.ID, c.Type)
		}
		out.Calls = append(out.Calls, core.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
	}
	return out, nil
}

// chatContent reads a message's content: a string, null, or text parts.
func chatContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of parts")
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part %d is %q; only text parts are taken", i+1, p.Type)
		}
		texts[i] = p.Text
	}
	return strings.Join(texts, "\n"), nil
}

// ChatMessages renders a run's messages in the OpenAI chat format, as the
// model of a native format reads them: an assistant message with its calls,
// a tool message per result (a text format's results are the user message
// the model read). Attachments are left out.
func ChatMessages(msgs []core.Message) []ChatMessage {
	out := make([]ChatMessage, len(msgs))
	for i, m := range msgs {
		content := m.Content
		c := ChatMessage{Role: m.Role, Content: &content, ToolCallID: m.CallID}
		if m.Role == core.RoleTool {
			c.Name = m.Name
		}
		if m.Role == core.RoleAssistant && m.Content == "" && len(m.Calls) > 0 {
			c.Content = nil
		}
		for _, call := range m.Calls {
			tc := ChatToolCall{ID: call.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = call.Name, string(call.Args)
			c.ToolCalls = append(c.ToolCalls, tc)
		}
		out[i] = c
	}
	return out
}
