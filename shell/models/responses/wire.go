package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	oresp "github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
)

// params maps a ModelRequest onto the wire. Its errors are permanent: the
// same request would fail the same way again.
func (p *Provider) params(req shell.ModelRequest) (oresp.ResponseNewParams, error) {
	var instructions []string
	var items oresp.ResponseInputParam
	for i, m := range req.Messages {
		switch m.Role {
		case core.RoleSystem:
			if m.Content != "" {
				instructions = append(instructions, m.Content)
			}
		case core.RoleUser:
			items = append(items, oresp.ResponseInputItemParamOfMessage(nonEmpty(m.Content), oresp.EasyInputMessageRoleUser))
		case core.RoleAssistant:
			if m.Opaque != nil && m.Opaque.Provider == Name {
				kept, err := keptItems(m.Opaque.Data)
				if err != nil {
					return oresp.ResponseNewParams{}, httpcall.Permanentf("message %d: the %s data kept with it: %v", i, Name, err)
				}
				items = append(items, kept...)
				continue
			}
			if m.Content != "" || len(m.Calls) == 0 {
				items = append(items, oresp.ResponseInputItemParamOfMessage(nonEmpty(m.Content), oresp.EasyInputMessageRoleAssistant))
			}
			for _, c := range m.Calls {
				items = append(items, oresp.ResponseInputItemParamOfFunctionCall(args(c.Args), c.ID, c.Name))
			}
		case core.RoleTool:
			out := oresp.ResponseInputItemParamOfFunctionCallOutput(m.Content)
			out.OfFunctionCallOutput.CallID = param.NewOpt(m.CallID)
			items = append(items, out)
		default:
			return oresp.ResponseNewParams{}, httpcall.Permanentf("message %d has role %q, not one of system, user, assistant, tool", i, m.Role)
		}
	}
	params := oresp.ResponseNewParams{
		Model:   shared.ResponsesModel(p.o.Model),
		Input:   oresp.ResponseNewParamsInputUnion{OfInputItemList: items},
		Store:   param.NewOpt(false),
		Include: []oresp.ResponseIncludable{oresp.ResponseIncludableReasoningEncryptedContent},
	}
	if len(instructions) > 0 {
		params.Instructions = param.NewOpt(strings.Join(instructions, "\n\n"))
	}
	for _, t := range req.Tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			schema = nil
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return oresp.ResponseNewParams{}, httpcall.Permanentf("tool %s: its parameters are not a JSON object: %v", t.Name, err)
			}
		}
		fn := &oresp.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: param.NewOpt(false)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, oresp.ToolUnionParam{OfFunction: fn})
	}
	if p.o.Temperature != nil {
		params.Temperature = param.NewOpt(float64(*p.o.Temperature))
	}
	if p.o.MaxTokens > 0 {
		params.MaxOutputTokens = param.NewOpt(int64(p.o.MaxTokens))
	}
	if p.o.ReasoningEffort != "" {
		params.Reasoning.Effort = shared.ReasoningEffort(p.o.ReasoningEffort)
	}
	if p.o.ReasoningSummary != "" {
		params.Reasoning.Summary = shared.ReasoningSummary(p.o.ReasoningSummary)
	}
	if shell.ObjectSchema(req.OutputSchema) {
		// Structured output: the final answer in the agent's schema (the
		// core checks it whatever the model sends).
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return oresp.ResponseNewParams{}, httpcall.Permanentf("the output schema is not a JSON object: %v", err)
		}
		params.Text.Format = oresp.ResponseFormatTextConfigUnionParam{OfJSONSchema: &oresp.ResponseFormatTextJSONSchemaConfigParam{
			Name: "output", Schema: schema, Strict: param.NewOpt(false)}}
	}
	return params, nil
}

// nonEmpty stands in for empty text, which the API refuses as content.
func nonEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

func args(a json.RawMessage) string {
	if len(a) == 0 {
		return "{}"
	}
	return string(a)
}

// keptItems turns the output items kept with a message back into input
// items, each sent as it came.
func keptItems(data []byte) ([]oresp.ResponseInputItemUnionParam, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	out := make([]oresp.ResponseInputItemUnionParam, 0, len(raw))
	for _, item := range raw {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, err
		}
		// Each variant marshals as the raw item given to Override.
		switch head.Type {
		case "reasoning":
			v := param.Override[oresp.ResponseReasoningItemParam](item)
			out = append(out, oresp.ResponseInputItemUnionParam{OfReasoning: &v})
		case "message":
			v := param.Override[oresp.ResponseOutputMessageParam](item)
			out = append(out, oresp.ResponseInputItemUnionParam{OfOutputMessage: &v})
		case "function_call":
			v := param.Override[oresp.ResponseFunctionToolCallParam](item)
			out = append(out, oresp.ResponseInputItemUnionParam{OfFunctionCall: &v})
		default:
			return nil, fmt.Errorf("an output item of type %q cannot be sent back", head.Type)
		}
	}
	return out, nil
}

// replyOf maps a final response onto a core.ModelReply; a failed response
// is an error (see codeError).
func replyOf(resp *oresp.Response) (core.ModelReply, error) {
	if resp.Status == "failed" {
		return core.ModelReply{}, codeError(string(resp.Error.Code), resp.Error.Message)
	}
	r := core.ModelReply{FinishReason: string(resp.Status)}
	if resp.Status == "incomplete" && resp.IncompleteDetails.Reason != "" {
		r.FinishReason += ": " + resp.IncompleteDetails.Reason
	}
	var text, refusal strings.Builder
	reasoning := false
	kept := make([]json.RawMessage, 0, len(resp.Output))
	for _, item := range resp.Output {
		switch item.Type {
		case "message":
			for _, c := range item.AsMessage().Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			r.Calls = append(r.Calls, core.NativeCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
		case "reasoning":
			reasoning = true
		default:
			continue // a built-in tool's item: none is asked for
		}
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(item.RawJSON())); err != nil {
			return core.ModelReply{}, httpcall.BadReplyf("an output item is not JSON: %v", err)
		}
		kept = append(kept, b.Bytes())
	}
	r.Text = text.String()
	if r.Text == "" {
		r.Text = refusal.String()
	}
	if reasoning {
		data, err := json.Marshal(kept)
		if err != nil {
			return core.ModelReply{}, err
		}
		r.Opaque = &core.Opaque{Provider: Name, Data: data}
	}
	u := resp.Usage
	r.Usage = core.Usage{
		PromptTokens: int(u.InputTokens), CompletionTokens: int(u.OutputTokens),
		CachedTokens: int(u.InputTokensDetails.CachedTokens), ReasoningTokens: int(u.OutputTokensDetails.ReasoningTokens),
	}
	return r, nil
}

// codeError is an error the API reported inside a 2xx reply (an "error"
// event, a failed response): a rate limit or a server error is retried,
// anything else is permanent.
func codeError(code, msg string) error {
	switch code {
	case "rate_limit_exceeded":
		return &httpcall.StatusError{Status: 429, Message: msg, Type: code}
	case "server_error", "":
		return httpcall.BadReplyf("the server reported an error: %s", msg)
	}
	return httpcall.Permanentf("the model failed (%s): %s", code, msg)
}

// streamError is a failed read of the stream: a malformed event or an
// error object in it (retried like a 5xx), or the connection breaking off.
func streamError(err error) error {
	if strings.Contains(err.Error(), "received error while streaming") {
		return httpcall.BadReplyf("the stream is not a response stream (%v)", err)
	}
	return streamed.Broke(err, "the stream is not a response stream")
}

// checkResponse reports a 2xx body that is not a response: a proxy's
// error page, a cut reply. It is retried like a 5xx.
func checkResponse(body []byte) error {
	return httpcall.CheckObject(body, "response", "object", "response", "output")
}
