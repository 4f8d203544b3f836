package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/shell"
	pt "github.com/stepwise-agent/stepwise/shell/models/internal/providertest"
)

// renderRequest holds signed thinking kept with an assistant message
// (sent back as it came), a tool call's failed result, a system prompt
// and a tool.
func renderRequest() shell.ModelRequest {
	req := ask("Weather in Paris?")
	req.Role, req.Call = core.Primary, 2
	opaque := &core.Opaque{Provider: Name, Data: []byte(`[` + thinkingBlock + `,` + textBlock +
		`,{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Paris"}}]`)}
	req.Messages = append(req.Messages,
		core.Message{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}, Opaque: opaque},
		core.Message{Role: core.RoleTool, CallID: "toolu_01A09q90qw90lq917835lq9", Content: "no such city <here> & there", IsError: true},
	)
	return req
}

// TestRenderRequestIsTheBodySent: streamed or not, with thinking and a
// temperature, RenderRequest gives the bytes, method, URL and headers the
// server received from Complete for the same request, the key redacted;
// a render-only provider, built without the key, renders the same.
func TestRenderRequestIsTheBodySent(t *testing.T) {
	temp := float32(0.5)
	for _, c := range []struct {
		name string
		opts Options
		rep  mt.Reply
	}{
		{"streamed", Options{ThinkingBudget: 2048}, mt.Reply{Events: stream("end_turn", 5, answerBlock)}},
		{"whole", Options{NoStream: true, Temperature: &temp, MaxTokens: 1000}, mt.Reply{Body: message("end_turn", answerBlock)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("STEPWISE_TEST_ANTHROPIC_KEY", "sk-ant-render-secret")
			srv := mt.New(t, c.rep)
			c.opts.APIKeyEnv = "STEPWISE_TEST_ANTHROPIC_KEY"
			p, _ := newProvider(t, srv, c.opts)
			if _, err := p.Complete(context.Background(), renderRequest()); err != nil {
				t.Fatal(err)
			}
			sent := srv.Requests()[0]
			out := pt.RendersAsSent(t, p, renderRequest(), srv, sent, "sk-ant-render-secret")
			if out.Provider != Name || out.Headers["X-Api-Key"] != "[redacted:STEPWISE_TEST_ANTHROPIC_KEY]" {
				t.Errorf("provider %q, X-Api-Key %q", out.Provider, out.Headers["X-Api-Key"])
			}
			if !strings.Contains(string(out.Body), `"signature":"EqQB`) {
				t.Errorf("the kept thinking is not in the body: %s", out.Body)
			}

			t.Setenv("STEPWISE_TEST_ANTHROPIC_KEY", "")
			c.opts.RenderOnly = true
			q, _ := newProvider(t, srv, c.opts)
			pt.RendersAsSent(t, q, renderRequest(), srv, sent, "sk-ant-render-secret")
			if _, err := q.Complete(context.Background(), renderRequest()); err == nil {
				t.Error("a render-only provider completed a request")
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the server got %d requests, want 1", n)
			}
		})
	}
}
