package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
)

// emptyText stands in for empty text, which the API refuses in a block.
const emptyText = "(empty)"

// params maps a ModelRequest onto the wire. Its errors are permanent: the
// same request would fail the same way again.
func (p *Provider) params(req shell.ModelRequest) (sdk.MessageNewParams, error) {
	params := sdk.MessageNewParams{Model: sdk.Model(p.o.Model), MaxTokens: int64(p.o.MaxTokens)}
	var turns []sdk.MessageParam
	add := func(role sdk.MessageParamRole, blocks ...sdk.ContentBlockParamUnion) {
		if n := len(turns); n > 0 && turns[n-1].Role == role {
			turns[n-1].Content = append(turns[n-1].Content, blocks...)
			return
		}
		turns = append(turns, sdk.MessageParam{Role: role, Content: blocks})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case core.RoleSystem:
			if m.Content != "" {
				params.System = append(params.System, sdk.TextBlockParam{Text: m.Content})
			}
		case core.RoleUser:
			add(sdk.MessageParamRoleUser, sdk.NewTextBlock(nonEmpty(m.Content)))
		case core.RoleAssistant:
			if m.Opaque != nil && m.Opaque.Provider == Name {
				blocks, err := keptBlocks(m.Opaque.Data)
				if err != nil {
					return params, httpcall.Permanentf("message %d: the %s data kept with it: %v", i, Name, err)
				}
				add(sdk.MessageParamRoleAssistant, blocks...)
				continue
			}
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" || len(m.Calls) == 0 {
				blocks = append(blocks, sdk.NewTextBlock(nonEmpty(m.Content)))
			}
			for _, c := range m.Calls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input(c.Args), c.Name))
			}
			add(sdk.MessageParamRoleAssistant, blocks...)
		case core.RoleTool:
			add(sdk.MessageParamRoleUser, sdk.NewToolResultBlock(m.CallID, nonEmpty(m.Content), m.IsError))
		default:
			return params, httpcall.Permanentf("message %d has role %q, not one of system, user, assistant, tool", i, m.Role)
		}
	}
	params.Messages = turns
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return params, httpcall.Permanentf("tool %s: %v", t.Name, err)
		}
		tool := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	if p.o.Temperature != nil {
		params.Temperature = param.NewOpt(float64(*p.o.Temperature))
	}
	if p.o.ThinkingBudget > 0 {
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(p.o.ThinkingBudget))
	}
	if shell.ObjectSchema(req.OutputSchema) {
		// Structured output: output_config.format (the core checks the
		// answer whatever the model sends).
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return params, httpcall.Permanentf("the output schema is not a JSON object: %v", err)
		}
		params.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	return params, nil
}

func nonEmpty(s string) string {
	if s == "" {
		return emptyText
	}
	return s
}

// input is a call's arguments as tool_use input: a JSON object.
func input(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	return args
}

// inputSchema splits a JSON Schema into the SDK's input_schema: its
// properties and required list, and every other key as is.
func inputSchema(params json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(params) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return s, fmt.Errorf("its parameters are not a JSON object: %v", err)
	}
	for k, v := range m {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("required is not a list of names: %v", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s, nil
}

// block is a content block as the provider keeps it in opaque data: the
// fields that go back to the API, in a fixed order, so the same reply
// keeps the same bytes whether it was streamed or not.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

func keptBlocks(data []byte) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []block
	if err := json.Unmarshal(data, &blocks); err != nil {
		return nil, err
	}
	out := make([]sdk.ContentBlockParamUnion, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, sdk.NewTextBlock(nonEmpty(b.Text)))
		case "thinking":
			out = append(out, sdk.NewThinkingBlock(b.Signature, b.Thinking))
		case "redacted_thinking":
			out = append(out, sdk.NewRedactedThinkingBlock(b.Data))
		case "tool_use":
			out = append(out, sdk.NewToolUseBlock(b.ID, input(b.Input), b.Name))
		default:
			return nil, fmt.Errorf("a block of type %q cannot be sent back", b.Type)
		}
	}
	return out, nil
}

// replyOf maps a message onto a core.ModelReply.
func replyOf(msg *sdk.Message) (core.ModelReply, error) {
	r := core.ModelReply{FinishReason: string(msg.StopReason)}
	var text strings.Builder
	var kept []block
	thinking := false
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			kept = append(kept, block{Type: "text", Text: b.Text})
		case "thinking":
			thinking = true
			kept = append(kept, block{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			thinking = true
			kept = append(kept, block{Type: "redacted_thinking", Data: b.Data})
		case "tool_use":
			args, err := compact(b.Input)
			if err != nil {
				return core.ModelReply{}, httpcall.BadReplyf("the input of tool_use %s is not JSON: %v", b.ID, err)
			}
			r.Calls = append(r.Calls, core.NativeCall{ID: b.ID, Name: b.Name, Arguments: string(args)})
			kept = append(kept, block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: args})
		}
	}
	r.Text = text.String()
	if thinking {
		data, err := json.Marshal(kept)
		if err != nil {
			return core.ModelReply{}, err
		}
		r.Opaque = &core.Opaque{Provider: Name, Data: data}
	}
	u := msg.Usage
	r.Usage = core.Usage{
		PromptTokens:     int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
		CompletionTokens: int(u.OutputTokens),
		CachedTokens:     int(u.CacheReadInputTokens),
		ReasoningTokens:  int(u.OutputTokensDetails.ThinkingTokens),
	}
	return r, nil
}

func compact(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// streamError is a failed read of the stream: an error event (see
// typeError), a malformed event (retried like a 5xx), or the connection
// breaking off (retried).
func streamError(err error) error {
	var aerr *sdk.Error
	if errors.As(err, &aerr) {
		msg, _ := httpcall.ServerMessage([]byte(aerr.RawJSON()))
		return typeError(string(aerr.Type()), msg)
	}
	if rest, ok := strings.CutPrefix(err.Error(), "received error while streaming: "); ok {
		msg, typ := httpcall.ServerMessage([]byte(rest))
		return typeError(typ, msg)
	}
	return streamed.Broke(err, "an event of the stream is not JSON")
}

// typeError is an error event of the given type: overloaded, rate-limited
// and internal errors are retried (as the statuses they stand for), any
// other fails the call.
func typeError(typ, msg string) error {
	switch typ {
	case "overloaded_error":
		return &httpcall.StatusError{Status: 529, Message: msg, Type: typ}
	case "rate_limit_error":
		return &httpcall.StatusError{Status: 429, Message: msg, Type: typ}
	case "api_error", "":
		return &httpcall.StatusError{Status: 500, Message: msg, Type: typ}
	}
	return httpcall.Permanentf("the API reported %s: %s", typ, msg)
}

// checkMessage reports a 2xx body that is not a message: a proxy's error
// page, a cut reply. It is retried like a 5xx.
func checkMessage(body []byte) error {
	return httpcall.CheckObject(body, "message", "type", "message", "content")
}
