package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// emptyContent replaces empty content where the API requires some.
const emptyContent = "(empty)"

// emptyParameters is the schema sent for a tool without parameters.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest maps a ModelRequest onto the wire. Its errors wrap
// shell.ErrModelPermanent: the same request would fail the same way again.
func (p *Provider) chatRequest(req shell.ModelRequest) (goopenai.ChatCompletionRequest, error) {
	msgs, err := toMessages(req.Messages, p.accepts)
	if err != nil {
		return goopenai.ChatCompletionRequest{}, permanentf("%v", err)
	}
	creq := goopenai.ChatCompletionRequest{
		Model:     p.model,
		Messages:  msgs,
		Tools:     toTools(req.Tools),
		MaxTokens: p.maxTokens,
	}
	if shell.ObjectSchema(req.OutputSchema) {
		// Structured output: the json_schema response format (the core
		// checks the answer whatever the model sends).
		creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Name: "output", Schema: req.OutputSchema}}
	}
	if p.temperature != nil {
		creq.Temperature = *p.temperature
		if creq.Temperature == 0 {
			// go-openai omits a zero temperature, which would mean the
			// server's default (usually 1).
			creq.Temperature = math.SmallestNonzeroFloat32
		}
	}
	err = goopenai.NewReasoningValidator().Validate(creq)
	if errors.Is(err, goopenai.ErrReasoningModelMaxTokensDeprecated) {
		creq.MaxCompletionTokens, creq.MaxTokens = creq.MaxTokens, 0
		err = goopenai.NewReasoningValidator().Validate(creq)
	}
	if err != nil {
		return goopenai.ChatCompletionRequest{}, permanentf("model %q does not accept this request: %v", p.model, err)
	}
	return creq, nil
}

// toMessages maps the conversation onto the wire. The attachments a message
// carries are sent as content parts when the model accepts them: in a user
// message, after its text; from tool messages, which take text only, in a
// user message after the run of tool messages.
func toMessages(in []core.Message, acc accepts) ([]goopenai.ChatCompletionMessage, error) {
	out := make([]goopenai.ChatCompletionMessage, 0, len(in))
	var media toolMedia
	for i, m := range in {
		if m.Role != core.RoleTool {
			out = media.flush(out)
		}
		w := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case core.RoleSystem:
			if m.Content == "" {
				continue
			}
		case core.RoleUser:
		case core.RoleAssistant:
			for _, c := range m.Calls {
				args := string(c.Args)
				if args == "" {
					args = "{}"
				}
				w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{
					ID:       c.ID,
					Type:     goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: c.Name, Arguments: args},
				})
			}
		case core.RoleTool:
			w.ToolCallID = m.CallID
			w.Name = m.Name
		default:
			return nil, fmt.Errorf("message %d has role %q, not one of system, user, assistant, tool", i, m.Role)
		}
		if w.Content == "" && len(w.ToolCalls) == 0 {
			w.Content = emptyContent
		}
		switch m.Role {
		case core.RoleUser:
			if parts := acc.parts(m.Attachments); len(parts) > 0 {
				w = withParts(w, parts)
			}
		case core.RoleTool:
			media.add(acc, m)
		}
		out = append(out, w)
	}
	return media.flush(out), nil
}

func toTools(in []core.Tool) []goopenai.Tool {
	if len(in) == 0 {
		return nil
	}
	out := make([]goopenai.Tool, len(in))
	for i, t := range in {
		params := t.Parameters
		if len(params) == 0 {
			params = emptyParameters
		}
		out[i] = goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		}
	}
	return out
}

// reply maps the first choice of a response onto a core.ModelReply
// (checkCompletion made sure there is one).
func reply(resp goopenai.ChatCompletionResponse) core.ModelReply {
	if len(resp.Choices) == 0 {
		return core.ModelReply{Usage: usage(&resp.Usage)}
	}
	ch := resp.Choices[0]
	r := core.ModelReply{
		Text:         ch.Message.Content,
		FinishReason: string(ch.FinishReason),
		Usage:        usage(&resp.Usage),
	}
	if r.Text == "" && ch.Message.Refusal != "" {
		r.Text = ch.Message.Refusal
	}
	for _, c := range ch.Message.ToolCalls {
		if c.Type != "" && c.Type != goopenai.ToolTypeFunction {
			continue
		}
		r.Calls = append(r.Calls, core.NativeCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if fc := ch.Message.FunctionCall; fc != nil && len(r.Calls) == 0 {
		// The legacy function_call field, still used by some servers.
		r.Calls = append(r.Calls, core.NativeCall{Name: fc.Name, Arguments: fc.Arguments})
	}
	return r
}

func usage(u *goopenai.Usage) core.Usage {
	if u == nil {
		return core.Usage{}
	}
	out := core.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}
