package script

import (
	"encoding/json"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// rendered is the body RenderRequest renders: what Complete is given of a
// request, and which reply answers it.
type rendered struct {
	Provider string `json:"provider"`
	Call     int    `json:"call"`
	// Reply is the number (from 1) of the script's reply that answers
	// the call: Call less the offset of a fork.
	Reply    int            `json:"reply"`
	Messages []core.Message `json:"messages"`
	Tools    []renderedTool `json:"tools,omitempty"`
}

// renderedTool is what a model is told of a tool.
type renderedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// RenderRequest renders req as the script provider takes it
// (shell.RequestRenderer). It makes no HTTP request, so Method and URL are
// empty; the body is the JSON object
//
//	{"provider":"script","call":N,"reply":R,"messages":[...],"tools":[...]}
//
// with the messages as core.Message encodes them to JSON and each tool's
// name, description and parameters. Reply R is the line of the script
// (counting replies only) that answers call N. The script is not read,
// nor named (the HTTP API names no file of its server's).
func (p *Provider) RenderRequest(req shell.ModelRequest) (shell.RenderedRequest, error) {
	r := rendered{Provider: Name, Call: req.Call, Reply: p.replyNumber(req.Call), Messages: req.Messages}
	if r.Messages == nil {
		r.Messages = []core.Message{}
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, renderedTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	body, err := json.Marshal(r)
	if err != nil {
		return shell.RenderedRequest{}, err
	}
	return shell.RenderedRequest{Provider: Name, Body: body}, nil
}
