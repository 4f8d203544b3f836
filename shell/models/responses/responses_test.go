package responses

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/shell"
	pt "github.com/stepwise-agent/stepwise/shell/models/internal/providertest"
)

func newProvider(t *testing.T, srv *mt.Server, opts Options) (*Provider, *mt.Sleeps) {
	t.Helper()
	s := &mt.Sleeps{}
	opts.BaseURL = srv.URL + "/v1"
	if opts.Model == "" {
		opts.Model = "o4-mini"
	}
	opts.Sleep, opts.Now, opts.Rand = s.Sleep, s.Now, func() float64 { return 0.5 }
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

var weather = core.Tool{Name: "get_weather", Description: "Current weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

func ask(text string) shell.ModelRequest {
	return shell.ModelRequest{
		Messages: []core.Message{{Role: core.RoleSystem, Content: "You are terse."}, {Role: core.RoleUser, Content: text}},
		Tools:    []core.Tool{weather},
	}
}

// TestReasoningGoesBackToTheModel: a streamed reply with reasoning and a
// call keeps its output items as opaque data; the next request sends them
// back verbatim (the encrypted reasoning included), in order, followed by
// the call's output; the reply is the one the unstreamed response gives.
func TestReasoningGoesBackToTheModel(t *testing.T) {
	srv := mt.New(t,
		mt.Reply{Events: stream("response.completed", 7, reasoningItem, callItem)},
		mt.Reply{Body: response("completed", usage, reasoningItem, callItem)},
		mt.Reply{Events: stream("response.completed", 5, textItem)},
	)
	p, _ := newProvider(t, srv, Options{ReasoningEffort: "medium"})
	rec := &pt.Recorder{}
	got, err := p.Complete(context.Background(), rec.Request(ask("Weather in Paris?")))
	if err != nil {
		t.Fatal(err)
	}
	want := core.ModelReply{
		Calls:        []core.NativeCall{{ID: "call_W1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		FinishReason: "completed",
		Usage:        core.Usage{PromptTokens: 120, CompletionTokens: 58, CachedTokens: 64, ReasoningTokens: 32},
		Opaque:       &core.Opaque{Provider: "openai-responses", Data: []byte("[" + reasoningItem + "," + callItem + "]")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reply %+v\nwant  %+v\nopaque %s", got, want, got.Opaque.Data)
	}
	if s := rec.Spelled(shell.DeltaCall); s != `{"city":"Paris"}` {
		t.Errorf("call deltas spell %q", s)
	}
	if s := rec.Spelled(shell.DeltaReasoning); s != "The user wants the weather; call the tool." {
		t.Errorf("reasoning deltas spell %q", s)
	}
	named := false
	for _, d := range rec.Deltas {
		named = named || (d.Kind == shell.DeltaCall && d.Call == 0 && d.Name == "get_weather")
	}
	if !named {
		t.Errorf("no delta names the call: %+v", rec.Deltas)
	}

	q, _ := newProvider(t, srv, Options{ReasoningEffort: "medium", NoStream: true})
	whole, err := q.Complete(context.Background(), ask("Weather in Paris?"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(whole, got) {
		t.Errorf("unstreamed %+v\nstreamed   %+v", whole, got)
	}

	// The next turn: the assistant message with its opaque data, and the
	// tool's result.
	next := ask("Weather in Paris?")
	next.Messages = append(next.Messages,
		core.Message{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "call_W1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}, Opaque: got.Opaque},
		core.Message{Role: core.RoleTool, CallID: "call_W1", Name: "get_weather", Content: "18 C"},
	)
	final, err := p.Complete(context.Background(), next)
	if err != nil || final.Text != "It is 18 C in Paris." || final.Opaque != nil {
		t.Fatalf("final = %+v, %v", final, err)
	}
	reqs := srv.Requests()
	in := pt.Body(t, reqs[2])["input"].([]any)
	var types []string
	for _, item := range in {
		typ, _ := item.(map[string]any)["type"].(string)
		types = append(types, typ)
	}
	if strings.Join(types, ",") != ",reasoning,function_call,function_call_output" {
		t.Fatalf("input item types %v", types)
	}
	if enc := in[1].(map[string]any)["encrypted_content"]; enc != "gAAAAABoEnc-opaque==" {
		t.Errorf("the reasoning went back without its encrypted content: %v", in[1])
	}
	if in[2].(map[string]any)["id"] != "fc_01" || in[3].(map[string]any)["call_id"] != "call_W1" || in[3].(map[string]any)["output"] != "18 C" {
		t.Errorf("call and output items: %v %v", in[2], in[3])
	}
}

// TestRequestOnTheWire: instructions from the system prompt, stateless
// requests asking for the encrypted reasoning, function tools without
// strict mode, a conversation without opaque data rebuilt from its text
// and calls.
func TestRequestOnTheWire(t *testing.T) {
	srv := mt.New(t, mt.Reply{Events: stream("response.completed", 100, textItem)})
	temp := float32(0.2)
	p, _ := newProvider(t, srv, Options{Temperature: &temp, MaxTokens: 300})
	req := ask("Weather in Paris?")
	req.Messages = append(req.Messages,
		core.Message{Role: core.RoleAssistant, Content: "Let me look.", Calls: []core.ToolCall{{ID: "c1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
		core.Message{Role: core.RoleTool, CallID: "c1", Content: "18 C"},
	)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Method != "POST" || r.Path != "/v1/responses" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
	b := pt.Body(t, r)
	for k, v := range map[string]any{"model": "o4-mini", "instructions": "You are terse.", "store": false, "stream": true, "temperature": 0.20000000298023224, "max_output_tokens": 300.0} {
		if !reflect.DeepEqual(b[k], v) {
			t.Errorf("%s = %v, want %v", k, b[k], v)
		}
	}
	if inc, _ := json.Marshal(b["include"]); string(inc) != `["reasoning.encrypted_content"]` {
		t.Errorf("include = %s", inc)
	}
	tools, _ := json.Marshal(b["tools"])
	if string(tools) != `[{"description":"Current weather.","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"strict":false,"type":"function"}]` {
		t.Errorf("tools = %s", tools)
	}
	in, _ := json.Marshal(b["input"])
	want := `[{"content":"Weather in Paris?","role":"user"},{"content":"Let me look.","role":"assistant"},` +
		`{"arguments":"{\"city\":\"Paris\"}","call_id":"c1","name":"get_weather","type":"function_call"},{"call_id":"c1","output":"18 C","type":"function_call_output"}]`
	if string(in) != want {
		t.Errorf("input = %s\nwant    %s", in, want)
	}
}

// TestFailures: each failure is retried or not as the API means it, and
// reported with its reason.
func TestFailures(t *testing.T) {
	ok := mt.Reply{Events: stream("response.completed", 4, textItem)}
	rateLimit := `{"error":{"message":"Rate limit reached for o4-mini on tokens per min (TPM).","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	partial := stream("response.completed", 4, textItem)[:6]
	for _, c := range []struct {
		name      string
		first     mt.Reply
		permanent bool
		reason    string
		wait      time.Duration
	}{
		{"429 with retry-after", mt.Reply{Status: 429, Body: rateLimit, Header: map[string]string{"Retry-After": "3"}}, false, "status 429 Too Many Requests: Rate limit reached", 3300 * time.Millisecond},
		{"500", mt.Reply{Status: 500, Body: `{"error":{"message":"The server had an error processing your request.","type":"server_error"}}`}, false, "status 500 Internal Server Error", 500 * time.Millisecond},
		{"401", mt.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: sk-x.","type":"invalid_request_error","code":"invalid_api_key"}}`}, true,
			"the endpoint refused the API key (401); check the variable STEPWISE_TEST_RESPONSES_KEY (the server said: Incorrect API key provided", 0},
		{"400", mt.Reply{Status: 400, Body: `{"error":{"message":"Invalid 'input[2].call_id'.","type":"invalid_request_error"}}`}, true, "rejected the request (400 Bad Request: Invalid 'input[2].call_id'.)", 0},
		{"malformed event", mt.Reply{Events: append(partial[:3:3], mt.Event{Name: "response.output_text.delta", Data: `{"type":"response.output_text.delta","delta":`})}, false, "the stream is not a response stream", 500 * time.Millisecond},
		{"connection cut", mt.Reply{Events: partial, Cut: true}, false, "the stream broke off", 500 * time.Millisecond},
		{"stream ends early", mt.Reply{Events: partial}, false, "the stream ended before the response was complete", 500 * time.Millisecond},
		{"error event, rate limit", mt.Reply{Events: append(partial[:3:3], mt.Event{Name: "error", Data: `{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":3}`})}, false, "status 429 Too Many Requests: Slow down.", 500 * time.Millisecond},
		{"error event, invalid prompt", mt.Reply{Events: append(partial[:3:3], mt.Event{Name: "error", Data: `{"type":"error","code":"invalid_prompt","message":"Bad prompt.","param":null,"sequence_number":3}`})}, true, "the model failed (invalid_prompt): Bad prompt.", 0},
		{"failed response", mt.Reply{Events: []mt.Event{{Name: "response.failed", Data: `{"type":"response.failed","sequence_number":1,"response":` +
			strings.Replace(response("failed", "null"), `"error":null`, `"error":{"code":"server_error","message":"Something broke."}`, 1) + `}`}}}, false, "the server reported an error: Something broke.", 500 * time.Millisecond},
		{"not a response", mt.Reply{Body: `<html>502 Bad Gateway</html>`}, false, "the reply is not a response", 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("STEPWISE_TEST_RESPONSES_KEY", "sk-test-responses")
			srv := mt.New(t, c.first, ok)
			p, s := newProvider(t, srv, Options{APIKeyEnv: "STEPWISE_TEST_RESPONSES_KEY"})
			rec := &pt.Recorder{}
			got, err := p.Complete(context.Background(), rec.Request(ask("hi")))
			if c.permanent {
				if !errors.Is(err, shell.ErrModelPermanent) || !strings.Contains(err.Error(), c.reason) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, c.reason)
				}
				if len(srv.Requests()) != 1 || len(s.Waits()) != 0 {
					t.Errorf("%d requests, waits %v: a permanent failure was retried", len(srv.Requests()), s.Waits())
				}
				return
			}
			if err != nil || got.Text != "It is 18 C in Paris." {
				t.Fatalf("Complete = %+v, %v; want the second attempt's reply", got, err)
			}
			if len(rec.Retries) != 1 || !strings.Contains(rec.Retries[0].Reason, c.reason) || rec.Retries[0].Wait != c.wait {
				t.Errorf("retries %+v, want one for %q after %v", rec.Retries, c.reason, c.wait)
			}
			if r := srv.Requests()[0]; r.Header.Get("Authorization") != "Bearer sk-test-responses" {
				t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
			}
		})
	}

	// Retries that run out are transient: the run stalls.
	srv := mt.New(t, mt.Reply{Status: 529, Body: `{"error":{"message":"Overloaded"}}`})
	p, _ := newProvider(t, srv, Options{Retry: shell.RetryPolicy{Attempts: 3}})
	_, err := p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) || te.Attempts != 3 || !strings.Contains(err.Error(), "gave up after 3 attempts (last: status 529 Overloaded: Overloaded)") {
		t.Errorf("err = %v", err)
	}
}

// TestNoEnvironment: the SDK's own variables are not read.
func TestNoEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	srv := mt.New(t, mt.Reply{Events: stream("response.completed", 100, textItem)})
	p, _ := newProvider(t, srv, Options{})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("headers from the environment: %v", h)
	}
}

// An agent's output schema goes to the Responses API as its text format
// (json_schema), for an object schema only.
func TestStructuredOutputOnTheWire(t *testing.T) {
	srv := mt.New(t, mt.Reply{Events: stream("response.completed", 100, textItem)})
	p, _ := newProvider(t, srv, Options{})
	req := ask("Classify: win a prize")
	req.OutputSchema = json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}`)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := pt.CompactJSON(pt.Body(t, srv.Requests()[0])["text"])
	if got != `{"format":{"name":"output","schema":{"properties":{"label":{"type":"string"}},"required":["label"],"type":"object"},"strict":false,"type":"json_schema"}}` {
		t.Errorf("text = %s", got)
	}
}
