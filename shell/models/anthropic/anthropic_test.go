package anthropic

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
	opts.BaseURL = srv.URL
	if opts.Model == "" {
		opts.Model = "claude-sonnet-4-5"
	}
	opts.Sleep, opts.Now, opts.Rand = s.Sleep, s.Now, func() float64 { return 0.5 }
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

var weather = core.Tool{Name: "get_weather", Description: "Current weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}

func ask(text string) shell.ModelRequest {
	return shell.ModelRequest{
		Messages: []core.Message{{Role: core.RoleSystem, Content: "You are terse."}, {Role: core.RoleUser, Content: text}},
		Tools:    []core.Tool{weather},
	}
}

// TestThinkingGoesBackToTheModel: a streamed reply with thinking, text and
// a tool call split across events assembles into the reply the same
// message gives unstreamed, thinking kept as opaque data; the next request
// sends the blocks back, signature included, and the tool's result as a
// tool_result in the user turn.
func TestThinkingGoesBackToTheModel(t *testing.T) {
	srv := mt.New(t,
		mt.Reply{Events: stream("tool_use", 6, thinkingBlock, textBlock, toolBlock)},
		mt.Reply{Body: message("tool_use", thinkingBlock, textBlock, toolBlock)},
		mt.Reply{Events: stream("end_turn", 5, answerBlock)},
	)
	p, _ := newProvider(t, srv, Options{ThinkingBudget: 2048})
	rec := &pt.Recorder{}
	got, err := p.Complete(context.Background(), rec.Request(ask("Weather in Paris?")))
	if err != nil {
		t.Fatal(err)
	}
	want := core.ModelReply{
		Text:         "I'll look up the weather in Paris.",
		Calls:        []core.NativeCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		FinishReason: "tool_use",
		Usage:        core.Usage{PromptTokens: 472 + 100 + 2048, CompletionTokens: 89, CachedTokens: 2048, ReasoningTokens: 40},
		Opaque: &core.Opaque{Provider: "anthropic", Data: []byte(`[` + thinkingBlock + `,` + textBlock +
			`,{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Paris"}}]`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reply %+v\nwant  %+v\nopaque %s", got, want, got.Opaque.Data)
	}
	if rec.Spelled(shell.DeltaText) != want.Text || rec.Spelled(shell.DeltaCall) != `{"city": "Paris"}` ||
		rec.Spelled(shell.DeltaReasoning) != "The user wants the weather in Paris; the tool gives it." {
		t.Errorf("deltas: %+v", rec.Deltas)
	}

	q, _ := newProvider(t, srv, Options{ThinkingBudget: 2048, NoStream: true})
	whole, err := q.Complete(context.Background(), ask("Weather in Paris?"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(whole, got) {
		t.Errorf("unstreamed %+v\nstreamed   %+v", whole, got)
	}

	next := ask("Weather in Paris?")
	next.Messages = append(next.Messages,
		core.Message{Role: core.RoleAssistant, Content: got.Text, Calls: []core.ToolCall{{ID: got.Calls[0].ID, Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}, Opaque: got.Opaque},
		core.Message{Role: core.RoleTool, CallID: got.Calls[0].ID, Name: "get_weather", Content: "18 C"},
	)
	final, err := p.Complete(context.Background(), next)
	if err != nil || final.Text != "It is 18 C in Paris." || final.Opaque != nil || final.FinishReason != "end_turn" {
		t.Fatalf("final = %+v, %v", final, err)
	}
	b := pt.Body(t, srv.Requests()[2])
	msgs := b["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("%d turns: %s", len(msgs), pt.CompactJSON(msgs))
	}
	if got := pt.CompactJSON(msgs[1]); got != `{"content":[{"signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds","thinking":"The user wants the weather in Paris; the tool gives it.","type":"thinking"},`+
		`{"text":"I'll look up the weather in Paris.","type":"text"},{"id":"toolu_01A09q90qw90lq917835lq9","input":{"city":"Paris"},"name":"get_weather","type":"tool_use"}],"role":"assistant"}` {
		t.Errorf("assistant turn %s", got)
	}
	if got := pt.CompactJSON(msgs[2]); got != `{"content":[{"content":[{"text":"18 C","type":"text"}],"is_error":false,"tool_use_id":"toolu_01A09q90qw90lq917835lq9","type":"tool_result"}],"role":"user"}` {
		t.Errorf("tool result turn %s", got)
	}
	if th := pt.CompactJSON(b["thinking"]); th != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Errorf("thinking = %s", th)
	}
}

// TestRequestOnTheWire: the system prompt, tools with input_schema, the
// version header and key, turns merged so roles alternate, failed calls
// marked is_error, and the same request bytes every time.
func TestRequestOnTheWire(t *testing.T) {
	t.Setenv("STEPWISE_TEST_ANTHROPIC_KEY", "sk-ant-test")
	srv := mt.New(t, mt.Reply{Events: stream("end_turn", 100, answerBlock)})
	p, _ := newProvider(t, srv, Options{APIKeyEnv: "STEPWISE_TEST_ANTHROPIC_KEY", MaxTokens: 1000})
	req := ask("Weather in Paris and Lyon?")
	req.Messages = append(req.Messages,
		core.Message{Role: core.RoleAssistant, Calls: []core.ToolCall{{ID: "t1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}, {ID: "t2", Name: "get_weather", Args: json.RawMessage(`{"city":"Lyon"}`)}}},
		core.Message{Role: core.RoleTool, CallID: "t1", Content: "18 C"},
		core.Message{Role: core.RoleTool, CallID: "t2", Content: "no such city", IsError: true},
		core.Message{Role: core.RoleUser, Content: "Your last reply could not be used."},
	)
	for range 2 {
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	r := reqs[0]
	if r.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("%s, headers %v", r.Path, r.Header)
	}
	if string(reqs[0].Body) != string(reqs[1].Body) {
		t.Errorf("the same request, different bytes:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
	b := pt.Body(t, r)
	for k, want := range map[string]string{
		"model":      `"claude-sonnet-4-5"`,
		"max_tokens": `1000`,
		"stream":     `true`,
		"system":     `[{"text":"You are terse.","type":"text"}]`,
		"tools":      `[{"description":"Current weather.","input_schema":{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather"}]`,
		"messages": `[{"content":[{"text":"Weather in Paris and Lyon?","type":"text"}],"role":"user"},` +
			`{"content":[{"id":"t1","input":{"city":"Paris"},"name":"get_weather","type":"tool_use"},{"id":"t2","input":{"city":"Lyon"},"name":"get_weather","type":"tool_use"}],"role":"assistant"},` +
			`{"content":[{"content":[{"text":"18 C","type":"text"}],"is_error":false,"tool_use_id":"t1","type":"tool_result"},{"content":[{"text":"no such city","type":"text"}],"is_error":true,"tool_use_id":"t2","type":"tool_result"},` +
			`{"text":"Your last reply could not be used.","type":"text"}],"role":"user"}]`,
	} {
		if got := pt.CompactJSON(b[k]); got != want {
			t.Errorf("%s = %s\nwant %s", k, got, want)
		}
	}
}

// TestFailures: each failure is retried or not as the API means it, and
// reported with its reason; retries that run out stall the run.
func TestFailures(t *testing.T) {
	ok := mt.Reply{Events: stream("end_turn", 4, answerBlock)}
	partial := stream("end_turn", 4, answerBlock)[:4]
	errEvent := func(typ, msg string) mt.Reply {
		return mt.Reply{Events: append(partial[:2:2], mt.Event{Name: "error", Data: `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`})}
	}
	for _, c := range []struct {
		name      string
		first     mt.Reply
		permanent bool
		reason    string
		wait      time.Duration
	}{
		{"429 with retry-after", mt.Reply{Status: 429, Header: map[string]string{"Retry-After": "4"}, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
			false, "status 429 Too Many Requests: Number of request tokens", 4400 * time.Millisecond},
		{"529 overloaded", mt.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, false, "status 529 Overloaded: Overloaded", 500 * time.Millisecond},
		{"401", mt.Reply{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}, true,
			"the endpoint refused the API key (401); check the variable STEPWISE_TEST_ANTHROPIC_KEY (the server said: invalid x-api-key)", 0},
		{"400", mt.Reply{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`}, true,
			"rejected the request (400 Bad Request: messages: text content blocks must be non-empty)", 0},
		{"overloaded in the stream", errEvent("overloaded_error", "Overloaded"), false, "status 529 Overloaded: Overloaded", 500 * time.Millisecond},
		{"invalid request in the stream", errEvent("invalid_request_error", "Bad thinking signature"), true, "the API reported invalid_request_error: Bad thinking signature", 0},
		{"malformed event", mt.Reply{Events: append(partial[:2:2], mt.Event{Name: "content_block_delta", Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`})}, false, "an event of the stream is not JSON", 500 * time.Millisecond},
		{"connection cut", mt.Reply{Events: partial, Cut: true}, false, "the stream broke off", 500 * time.Millisecond},
		{"stream ends early", mt.Reply{Events: partial}, false, "the stream ended before message_stop", 500 * time.Millisecond},
		{"not a message", mt.Reply{Body: `{"status":"ok"}`}, false, "the reply is not a message with content: ", 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("STEPWISE_TEST_ANTHROPIC_KEY", "sk-ant-test")
			srv := mt.New(t, c.first, ok)
			p, s := newProvider(t, srv, Options{APIKeyEnv: "STEPWISE_TEST_ANTHROPIC_KEY"})
			rec := &pt.Recorder{}
			got, err := p.Complete(context.Background(), rec.Request(ask("hi")))
			if c.permanent {
				if !errors.Is(err, shell.ErrModelPermanent) || !strings.Contains(err.Error(), c.reason) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, c.reason)
				}
				if strings.Contains(err.Error(), "sk-ant-test") {
					t.Errorf("the error shows the key: %v", err)
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
		})
	}

	srv := mt.New(t, mt.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	p, _ := newProvider(t, srv, Options{Retry: shell.RetryPolicy{Attempts: 2}})
	_, err := p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) || te.Attempts != 2 || !strings.Contains(err.Error(), "gave up after 2 attempts (last: status 529 Overloaded: Overloaded)") {
		t.Errorf("err = %v", err)
	}
}

// TestNoEnvironment: the SDK's own variables are not read.
func TestNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
	srv := mt.New(t, mt.Reply{Events: stream("end_turn", 100, answerBlock)})
	p, _ := newProvider(t, srv, Options{})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("x-api-key") != "" || h.Get("Authorization") != "" {
		t.Errorf("credentials from the environment: %v", h)
	}
}

func TestOptionsChecked(t *testing.T) {
	for _, o := range []Options{
		{},
		{Model: "m", BaseURL: "api.anthropic.com"},
		{Model: "m", MaxTokens: -1},
		{Model: "m", ThinkingBudget: 100},
		{Model: "m", MaxTokens: 2000, ThinkingBudget: 2000},
		{Model: "m", Retry: shell.RetryPolicy{Jitter: 2}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// An agent's output schema goes to the Messages API as structured output
// (output_config.format), for an object schema only.
func TestStructuredOutputOnTheWire(t *testing.T) {
	t.Setenv("STEPWISE_TEST_ANTHROPIC_KEY", "sk-ant-test")
	srv := mt.New(t, mt.Reply{Events: stream("end_turn", 100, answerBlock)}, mt.Reply{Events: stream("end_turn", 100, answerBlock)})
	p, _ := newProvider(t, srv, Options{APIKeyEnv: "STEPWISE_TEST_ANTHROPIC_KEY", MaxTokens: 1000})
	req := ask("Classify: win a prize")
	req.OutputSchema = json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}`)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.OutputSchema = json.RawMessage(`{"type":"array"}`)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if got := pt.CompactJSON(pt.Body(t, reqs[0])["output_config"]); got != `{"format":{"schema":{"properties":{"label":{"type":"string"}},"required":["label"],"type":"object"},"type":"json_schema"}}` {
		t.Errorf("output_config = %s", got)
	}
	if _, ok := pt.Body(t, reqs[1])["output_config"]; ok {
		t.Errorf("an array schema was sent natively")
	}
}
