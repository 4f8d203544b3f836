package openai

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

// renderRequest is a request that exercises the whole body builder: a
// system prompt, a tool call and its result with an image and a sound
// (the sound's part rewritten on the wire), tools, text with & and <.
func renderRequest() shell.ModelRequest {
	return shell.ModelRequest{
		Role: core.Primary, Call: 3,
		Messages: []core.Message{
			{Role: core.RoleSystem, Content: "You are terse & exact."},
			{Role: core.RoleUser, Content: "Describe <this>.", Attachments: []core.Attachment{png}},
			{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
			{Role: core.RoleTool, CallID: "call_1", Name: "get_weather", Content: "[audio]", Attachments: []core.Attachment{wav}},
		},
		Tools: weatherTools(),
	}
}

// TestRenderRequestIsTheBodySent: for each way the provider sends
// (streamed or not, a zero temperature, max tokens), RenderRequest gives
// the bytes the server received from Complete for the same request, the
// method, URL and headers it received, and the key redacted.
func TestRenderRequestIsTheBodySent(t *testing.T) {
	zero := float32(0)
	for _, c := range []struct {
		name string
		opts Options
		rep  mt.Reply
	}{
		{"streamed", Options{}, mt.Reply{Events: textStream}},
		{"whole", Options{NoStream: true, Temperature: &zero, MaxTokens: 300}, mt.Reply{Body: textCompletion}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("STEPWISE_TEST_OPENAI_KEY", "sk-render-secret")
			srv := mt.New(t, c.rep)
			c.opts.APIKeyEnv, c.opts.Accepts = "STEPWISE_TEST_OPENAI_KEY", []string{AcceptImage, AcceptAudio}
			p, _ := streamProvider(t, srv, c.opts)
			req := renderRequest()
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			sent := srv.Requests()[0]
			if !strings.Contains(string(sent.Body), `"input_audio":{"data":`) {
				t.Fatalf("the audio part was not rewritten on the wire: %s", sent.Body)
			}
			out := pt.RendersAsSent(t, p, req, srv, sent, "sk-render-secret")
			if out.Provider != Name || out.Headers["Authorization"] != "Bearer [redacted:STEPWISE_TEST_OPENAI_KEY]" {
				t.Errorf("provider %q, Authorization %q", out.Provider, out.Headers["Authorization"])
			}
			if len(srv.Requests()) != 1 {
				t.Errorf("RenderRequest sent a request: the server got %d", len(srv.Requests()))
			}
		})
	}
}

// TestRenderOnlyNeedsNoKey: a provider built to render reads no key (its
// marker stands in for it), renders what one with the key sends, and
// refuses to complete.
func TestRenderOnlyNeedsNoKey(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "sk-render-secret")
	srv := mt.New(t, mt.Reply{Events: textStream})
	p, _ := streamProvider(t, srv, Options{APIKeyEnv: "STEPWISE_TEST_OPENAI_KEY"})
	if _, err := p.Complete(context.Background(), renderRequest()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "")
	q, _ := streamProvider(t, srv, Options{APIKeyEnv: "STEPWISE_TEST_OPENAI_KEY", RenderOnly: true})
	pt.RendersAsSent(t, q, renderRequest(), srv, srv.Requests()[0], "sk-render-secret")
	if _, err := q.Complete(context.Background(), renderRequest()); err == nil || !strings.Contains(err.Error(), "render requests only") {
		t.Errorf("Complete of a render-only provider: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
}

// TestRenderAzure: an Azure endpoint's api-key header is redacted and its
// api-version is in the URL.
func TestRenderAzure(t *testing.T) {
	t.Setenv("STEPWISE_TEST_AZURE_KEY", "az-render-secret")
	p, err := New(Options{BaseURL: "https://example.openai.azure.com", Model: "gpt-4o", APIKeyEnv: "STEPWISE_TEST_AZURE_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.RenderRequest(ask("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := "https://example.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=" + DefaultAzureAPIVersion
	if out.Method != "POST" || out.URL != want || out.Headers["Api-Key"] != "[redacted:STEPWISE_TEST_AZURE_KEY]" {
		t.Errorf("rendered %s %s headers %v", out.Method, out.URL, out.Headers)
	}
	if strings.Contains(pt.CompactJSON(out), "az-render-secret") {
		t.Errorf("the key is rendered: %s", pt.CompactJSON(out))
	}
}
