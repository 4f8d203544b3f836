package responses

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

// renderRequest holds output items kept with an assistant message (sent
// back verbatim, the encrypted reasoning included), a call's output, a
// system prompt and a tool.
func renderRequest() shell.ModelRequest {
	req := ask("Weather in Paris & <Lyon>?")
	req.Role, req.Call = core.Primary, 2
	req.Messages = append(req.Messages,
		core.Message{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "call_W1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}},
			Opaque: &core.Opaque{Provider: Name, Data: []byte("[" + reasoningItem + "," + callItem + "]")}},
		core.Message{Role: core.RoleTool, CallID: "call_W1", Name: "get_weather", Content: "18 C"},
	)
	return req
}

// TestRenderRequestIsTheBodySent: streamed or not, with reasoning
// options, a temperature and max tokens, RenderRequest gives the bytes,
// method, URL and headers the server received from Complete for the same
// request, the key redacted; a render-only provider, built without the
// key, renders the same.
func TestRenderRequestIsTheBodySent(t *testing.T) {
	temp := float32(0.2)
	for _, c := range []struct {
		name string
		opts Options
		rep  mt.Reply
	}{
		{"streamed", Options{ReasoningEffort: "medium", ReasoningSummary: "auto"}, mt.Reply{Events: stream("response.completed", 5, textItem)}},
		{"whole", Options{NoStream: true, Temperature: &temp, MaxTokens: 500}, mt.Reply{Body: response("completed", usage, textItem)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("STEPWISE_TEST_RESPONSES_KEY", "sk-responses-render-secret")
			srv := mt.New(t, c.rep)
			c.opts.APIKeyEnv = "STEPWISE_TEST_RESPONSES_KEY"
			p, _ := newProvider(t, srv, c.opts)
			if _, err := p.Complete(context.Background(), renderRequest()); err != nil {
				t.Fatal(err)
			}
			sent := srv.Requests()[0]
			out := pt.RendersAsSent(t, p, renderRequest(), srv, sent, "sk-responses-render-secret")
			if out.Provider != Name || out.Headers["Authorization"] != "Bearer [redacted:STEPWISE_TEST_RESPONSES_KEY]" {
				t.Errorf("provider %q, Authorization %q", out.Provider, out.Headers["Authorization"])
			}
			if !strings.Contains(string(out.Body), `"encrypted_content":"gAAAAABoEnc-opaque=="`) {
				t.Errorf("the kept reasoning is not in the body: %s", out.Body)
			}

			t.Setenv("STEPWISE_TEST_RESPONSES_KEY", "")
			c.opts.RenderOnly = true
			q, _ := newProvider(t, srv, c.opts)
			pt.RendersAsSent(t, q, renderRequest(), srv, sent, "sk-responses-render-secret")
			if _, err := q.Complete(context.Background(), renderRequest()); err == nil {
				t.Error("a render-only provider completed a request")
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the server got %d requests, want 1", n)
			}
		})
	}
}
