package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
)

// accumulator assembles a streamed chat completion into the reply the same
// completion unstreamed gives: the first choice's text (or refusal), its
// tool calls with their pieces joined in index order, the finish reason,
// and the usage of the last chunk.
type accumulator struct {
	text, refusal strings.Builder
	calls         []*streamCall
	legacy        *goopenai.FunctionCall
	finish        string
	usage         core.Usage
	deltas        *streamed.Deltas
}

type streamCall struct {
	index    int
	id, typ  string
	name     string
	args     strings.Builder
	reported bool
}

func (a *accumulator) add(chunk goopenai.ChatCompletionStreamResponse) {
	if chunk.Usage != nil {
		a.usage = usage(chunk.Usage)
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.Content != "" {
			a.text.WriteString(d.Content)
			a.deltas.Text(d.Content)
		}
		if d.Refusal != "" {
			a.refusal.WriteString(d.Refusal)
			a.deltas.Text(d.Refusal)
		}
		a.deltas.Reasoning(d.ReasoningContent)
		for k, tc := range d.ToolCalls {
			idx := k
			if tc.Index != nil {
				idx = *tc.Index
			}
			c := a.call(idx)
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Type != "" {
				c.typ = string(tc.Type)
			}
			c.name += tc.Function.Name
			c.args.WriteString(tc.Function.Arguments)
			if tc.Function.Arguments != "" || !c.reported {
				name := ""
				if !c.reported && c.name != "" {
					name, c.reported = c.name, true
				}
				a.deltas.Call(c.index, name, tc.Function.Arguments)
			}
		}
		if fc := d.FunctionCall; fc != nil {
			if a.legacy == nil {
				a.legacy = &goopenai.FunctionCall{}
			}
			a.legacy.Name += fc.Name
			a.legacy.Arguments += fc.Arguments
		}
		if ch.FinishReason != "" {
			a.finish = string(ch.FinishReason)
		}
	}
}

// call returns the call at index idx, making it (calls come in index
// order; a gap is kept in order too).
func (a *accumulator) call(idx int) *streamCall {
	for _, c := range a.calls {
		if c.index == idx {
			return c
		}
	}
	c := &streamCall{index: idx}
	pos := len(a.calls)
	for pos > 0 && a.calls[pos-1].index > idx {
		pos--
	}
	a.calls = append(a.calls, nil)
	copy(a.calls[pos+1:], a.calls[pos:])
	a.calls[pos] = c
	return c
}

// reply is the assembled reply. A stream that ended without a finish
// reason broke off: the attempt failed.
func (a *accumulator) reply() (core.ModelReply, error) {
	if a.finish == "" {
		return core.ModelReply{}, httpcall.BadReplyf("the stream ended before the reply did (no finish_reason)")
	}
	r := core.ModelReply{Text: a.text.String(), FinishReason: a.finish, Usage: a.usage}
	if r.Text == "" {
		r.Text = a.refusal.String()
	}
	for _, c := range a.calls {
		if c.typ != "" && c.typ != string(goopenai.ToolTypeFunction) {
			continue
		}
		r.Calls = append(r.Calls, core.NativeCall{ID: c.id, Name: c.name, Arguments: c.args.String()})
	}
	if a.legacy != nil && len(r.Calls) == 0 {
		r.Calls = append(r.Calls, core.NativeCall{Name: a.legacy.Name, Arguments: a.legacy.Arguments})
	}
	return r, nil
}

// streamError is what a failed read of the stream means: an error the
// server sent in the stream or a chunk that is not JSON (the reply is
// unusable: retried), or the connection breaking off (retried too).
func streamError(err error) error {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return httpcall.BadReplyf("the server sent an error in the stream: %s", apiErr.Message)
	}
	return streamed.Broke(err, "a chunk of the stream is not a chat completion chunk")
}

// checkCompletion reports a 2xx body that is not a chat completion with a
// choice: a proxy's error page, a truncated reply. Such a reply is retried
// like a 5xx.
func checkCompletion(body []byte) error {
	var c goopenai.ChatCompletionResponse
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("the reply is not a chat completion (%v)%s", err, httpcall.Quoted(body))
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("the reply has no choices%s", httpcall.Quoted(body))
	}
	return nil
}
