package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// newProvider makes a Provider whose waits are recorded, not slept, on a
// fake clock that moves on by each wait. Unless opts says otherwise, the
// jitter draws 0.5: a backoff is then exact and a Retry-After is lengthened
// by half the jitter.
func newProvider(t *testing.T, opts Options) (*Provider, *sleeps) {
	t.Helper()
	s := &sleeps{}
	if opts.Model == "" {
		opts.Model = "gpt-4o-mini"
	}
	if opts.Sleep == nil {
		opts.Sleep = s.sleep
	}
	if opts.Now == nil {
		opts.Now = s.now
	}
	if opts.Rand == nil {
		opts.Rand = func() float64 { return 0.5 }
	}
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, s
}

func ask(text string) shell.ModelRequest {
	return shell.ModelRequest{Messages: []core.Message{
		{Role: core.RoleSystem, Content: "You are terse."},
		{Role: core.RoleUser, Content: text},
	}}
}

func roleOf(t *testing.T, m map[string]json.RawMessage) string {
	t.Helper()
	var r string
	if err := json.Unmarshal(m["role"], &r); err != nil {
		t.Fatalf("message without a string role: %v", m)
	}
	return r
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a JSON string: %s", raw)
	}
	return s
}

func TestPlainTextReply(t *testing.T) {
	srv := newFakeServer(t, ok(textCompletion))
	p, _ := newProvider(t, Options{BaseURL: srv.base()})

	got, err := p.Complete(context.Background(), ask("Capital of France?"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := core.ModelReply{
		Text:         "Paris is the capital of France.",
		FinishReason: "stop",
		Usage:        core.Usage{PromptTokens: 21, CompletionTokens: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reply = %+v, want %+v", got, want)
	}

	reqs := srv.recorded()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.method, r.path)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	// Streamed by default, with the usage in the last chunk; this server
	// ignores that and answers a whole completion, which is understood.
	if r.body.Model != "gpt-4o-mini" || !r.body.Stream {
		t.Errorf("model = %q, stream = %v", r.body.Model, r.body.Stream)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(r.raw, &raw)
	if string(raw["stream_options"]) != `{"include_usage":true}` {
		t.Errorf("stream_options = %s", raw["stream_options"])
	}
	for _, k := range []string{"tools", "temperature", "max_tokens"} {
		if _, has := raw[k]; has {
			t.Errorf("request has %q although nothing asked for it: %s", k, r.raw)
		}
	}
	if len(r.body.Messages) != 2 {
		t.Fatalf("%d messages, want 2", len(r.body.Messages))
	}
	for i, want := range []struct{ role, content string }{{"system", "You are terse."}, {"user", "Capital of France?"}} {
		m := r.body.Messages[i]
		if roleOf(t, m) != want.role || str(t, m["content"]) != want.content {
			t.Errorf("message %d = %v, want %s %q", i, m, want.role, want.content)
		}
	}
}

func TestToolCallReply(t *testing.T) {
	srv := newFakeServer(t, ok(toolCallCompletion))
	p, _ := newProvider(t, Options{BaseURL: srv.base()})
	req := ask("Weather and time in Paris?")
	req.Tools = []core.Tool{
		{Name: "get_weather", Description: "Current weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "get_time"},
	}

	got, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := core.ModelReply{
		Calls: []core.NativeCall{
			{ID: "call_Ab1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			{ID: "call_Cd2", Name: "get_time", Arguments: `{"tz":"Europe/Paris"`}, // malformed, kept as sent
		},
		FinishReason: "tool_calls",
		Usage:        core.Usage{PromptTokens: 90, CompletionTokens: 45},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reply = %+v\nwant    %+v", got, want)
	}

	tools := srv.recorded()[0].body.Tools
	if len(tools) != 2 {
		t.Fatalf("%d tools on the wire, want 2", len(tools))
	}
	for i, want := range []struct{ name, desc, params string }{
		{"get_weather", "Current weather.", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`},
		{"get_time", "", `{"type":"object","properties":{}}`},
	} {
		tl := tools[i]
		if tl.Type != "function" || tl.Function.Name != want.name || tl.Function.Description != want.desc || string(tl.Function.Parameters) != want.params {
			t.Errorf("tool %d = %+v (parameters %s), want %+v", i, tl, tl.Function.Parameters, want)
		}
	}
}

func TestPriorToolMessages(t *testing.T) {
	srv := newFakeServer(t, ok(textCompletion))
	p, _ := newProvider(t, Options{BaseURL: srv.base()})
	req := shell.ModelRequest{Messages: []core.Message{
		{Role: core.RoleSystem, Content: "sys"},
		{Role: core.RoleUser, Content: "Weather and time in Paris?"},
		{Role: core.RoleAssistant, Calls: []core.ToolCall{
			{ID: "call_Ab1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_Cd2", Name: "get_time", Args: json.RawMessage(`{"tz":"Europe/Paris"}`)},
		}},
		{Role: core.RoleTool, CallID: "call_Ab1", Name: "get_weather", Content: "18°C, cloudy"},
		{Role: core.RoleTool, CallID: "call_Cd2", Name: "get_time", Content: ""},
		{Role: core.RoleAssistant, Content: "Thinking.", Calls: []core.ToolCall{{ID: "call_Ef3", Name: "get_time"}}},
		{Role: core.RoleTool, CallID: "call_Ef3", Name: "get_time", Content: "14:02"},
	}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	msgs := srv.recorded()[0].body.Messages
	if len(msgs) != 7 {
		t.Fatalf("%d messages on the wire, want 7", len(msgs))
	}

	asst := msgs[2]
	if roleOf(t, asst) != "assistant" {
		t.Fatalf("message 2 role = %s", asst["role"])
	}
	if c, has := asst["content"]; has && string(c) != "null" {
		t.Errorf("an assistant message with only calls has content %s; want it absent or null", c)
	}
	var calls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(asst["tool_calls"], &calls); err != nil {
		t.Fatalf("tool_calls: %v (%s)", err, asst["tool_calls"])
	}
	if len(calls) != 2 || calls[0].ID != "call_Ab1" || calls[0].Type != "function" || calls[0].Function.Name != "get_weather" ||
		calls[0].Function.Arguments != `{"city":"Paris"}` || calls[1].ID != "call_Cd2" || calls[1].Function.Arguments != `{"tz":"Europe/Paris"}` {
		t.Errorf("tool_calls = %+v", calls)
	}

	for i, want := range []struct{ id, name, content string }{
		3: {"call_Ab1", "get_weather", "18°C, cloudy"},
		4: {"call_Cd2", "get_time", emptyContent},
		6: {"call_Ef3", "get_time", "14:02"},
	} {
		if want.id == "" {
			continue
		}
		m := msgs[i]
		if roleOf(t, m) != "tool" || str(t, m["tool_call_id"]) != want.id || str(t, m["name"]) != want.name || str(t, m["content"]) != want.content {
			t.Errorf("message %d = %v, want tool %+v", i, m, want)
		}
	}
	if str(t, msgs[5]["content"]) != "Thinking." || !strings.Contains(string(msgs[5]["tool_calls"]), `"arguments":"{}"`) {
		t.Errorf("message 5 = %v; want its content kept and empty arguments sent as {}", msgs[5])
	}
}

func TestPermanentErrors(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "sk-secret-value")
	cases := []struct {
		name   string
		reply  fakeReply
		keyEnv string
		want   []string
	}{
		{"401", status(401, badKeyError), "STEPWISE_TEST_OPENAI_KEY",
			[]string{"the endpoint refused the API key (401); check the variable STEPWISE_TEST_OPENAI_KEY", "Incorrect API key provided"}},
		{"403", status(403, `{"error":{"message":"Project does not have access","type":"invalid_request_error"}}`), "STEPWISE_TEST_OPENAI_KEY",
			[]string{"the endpoint refused the API key (403); check the variable STEPWISE_TEST_OPENAI_KEY"}},
		{"401 without a key", status(401, badKeyError), "",
			[]string{"refused the request (401) and no API key was sent"}},
		{"404", status(404, noModelError), "",
			[]string{`model "gpt-9" or endpoint not found at `, "/v1 (404)", "does not exist"}},
		{"404 from ollama", status(404, `{"error":"model \"gpt-9\" not found, try pulling it first"}`), "",
			[]string{`model "gpt-9" or endpoint not found`, "try pulling it first"}},
		{"400", status(400, badToolError), "",
			[]string{"rejected the request (400 Bad Request: Invalid 'messages[2].tool_calls[0].id': string too long.)"}},
		{"422 plain text", status(422, "unprocessable\n  entity"), "",
			[]string{"422 Unprocessable Entity: unprocessable entity"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeServer(t, c.reply, ok(textCompletion))
			p, s := newProvider(t, Options{BaseURL: srv.base(), Model: "gpt-9", APIKeyEnv: c.keyEnv})
			_, err := p.Complete(context.Background(), ask("hi"))
			if !errors.Is(err, shell.ErrModelPermanent) {
				t.Fatalf("err = %v, want it to wrap ErrModelPermanent", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "sk-secret-value") {
				t.Errorf("the error shows the key: %v", err)
			}
			if strings.Contains(err.Error(), "under /v1") {
				t.Errorf("the /v1 hint for a base URL that has it: %v", err)
			}
			if n := len(srv.recorded()); n != 1 || len(s.recorded()) != 0 {
				t.Errorf("%d requests and waits %v; a permanent error must not be retried", n, s.recorded())
			}
		})
	}
}

func TestAPIKeyFromEnvironment(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "sk-test-123")
	srv := newFakeServer(t, ok(textCompletion))

	p, _ := newProvider(t, Options{BaseURL: srv.base(), APIKeyEnv: "STEPWISE_TEST_OPENAI_KEY"})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	p, _ = newProvider(t, Options{BaseURL: srv.base()})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.recorded()
	if got := reqs[0].header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("Authorization = %q, want the key from the variable as a Bearer token", got)
	}
	if got, has := reqs[1].header["Authorization"]; has {
		t.Errorf("Authorization = %q sent without a key variable", got)
	}

	if s := p.String(); strings.Contains(s, "sk-") {
		t.Errorf("String shows the key: %s", s)
	}
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "")
	if _, err := New(Options{Model: "m", APIKeyEnv: "STEPWISE_TEST_OPENAI_KEY"}); err == nil || !strings.Contains(err.Error(), "STEPWISE_TEST_OPENAI_KEY") {
		t.Errorf("New with an empty key variable: err = %v, want one naming the variable", err)
	}
}

// redirect sends every request to the fake server, whatever its URL says.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

func TestAzure(t *testing.T) {
	t.Setenv("STEPWISE_TEST_AZURE_KEY", "az-key")
	srv := newFakeServer(t, ok(textCompletion))
	to, _ := url.Parse(srv.URL)
	p, _ := newProvider(t, Options{
		BaseURL:    "https://myres.openai.azure.com",
		Model:      "gpt-35.turbo:prod",
		APIKeyEnv:  "STEPWISE_TEST_AZURE_KEY",
		HTTPClient: &http.Client{Transport: redirect{to}},
	})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	r := srv.recorded()[0]
	if r.path != "/openai/deployments/gpt-35.turbo:prod/chat/completions" || r.query != "api-version="+DefaultAzureAPIVersion {
		t.Errorf("request to %s?%s", r.path, r.query)
	}
	if r.header.Get("api-key") != "az-key" || r.header.Get("Authorization") != "" {
		t.Errorf("api-key = %q, Authorization = %q", r.header.Get("api-key"), r.header.Get("Authorization"))
	}
}

func TestSamplingOptions(t *testing.T) {
	srv := newFakeServer(t, ok(textCompletion))
	zero := float32(0)
	p, _ := newProvider(t, Options{BaseURL: srv.base(), Temperature: &zero, MaxTokens: 100})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	p, _ = newProvider(t, Options{BaseURL: srv.base(), Model: "o3-mini", MaxTokens: 200})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.recorded()
	if b := reqs[0].body; b.Temperature == nil || *b.Temperature <= 0 || *b.Temperature > 1e-30 || b.MaxTokens == nil || *b.MaxTokens != 100 {
		t.Errorf("temperature 0 and max tokens 100 sent as %s", reqs[0].raw)
	}
	if b := reqs[1].body; b.MaxTokens != nil || b.MaxCompletionTokens == nil || *b.MaxCompletionTokens != 200 {
		t.Errorf("max tokens for o3-mini sent as %s", reqs[1].raw)
	}
}

func TestMalformedRepliesAreTransient(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"no choices":     {`{"id":"x","object":"chat.completion","choices":[],"usage":{}}`, "the reply has no choices"},
		"not JSON":       {`<html>hello</html>`, "the reply is not a chat completion (invalid character '<' looking for beginning of value): <html>hello</html>"},
		"error in a 200": {`{"error":{"message":"upstream timed out"}}`, "the reply has no choices: upstream timed out"},
		"wrong types":    {`{"choices":"many"}`, "the reply is not a chat completion"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, ok(c.body))
			p, s := newProvider(t, Options{BaseURL: srv.base(), Retry: shell.RetryPolicy{Attempts: 3}})
			_, err := p.Complete(context.Background(), ask("hi"))
			var te *shell.TransientError
			if !errors.As(err, &te) || errors.Is(err, shell.ErrModelPermanent) {
				t.Fatalf("err = %v, want a TransientError", err)
			}
			if te.Attempts != 3 || len(srv.recorded()) != 3 || len(s.recorded()) != 2 {
				t.Errorf("%d attempts, %d requests, waits %v; want 3 attempts, 3 requests, 2 waits", te.Attempts, len(srv.recorded()), s.recorded())
			}
			if !strings.Contains(err.Error(), "gave up after 3 attempts (last: "+c.want) {
				t.Errorf("err = %v, want it to name the attempts and contain %q", err, c.want)
			}
		})
	}

	// A proxy's glitch goes away on the next attempt.
	srv := newFakeServer(t, ok(`<html>502 Bad Gateway</html>`), ok(textCompletion))
	p, _ := newProvider(t, Options{BaseURL: srv.base()})
	if got, err := p.Complete(context.Background(), ask("hi")); err != nil || got.Text == "" {
		t.Errorf("Complete after a glitch = %+v, %v; want the second reply", got, err)
	}
}

func TestVersionHint(t *testing.T) {
	for _, c := range []struct {
		base, want string
	}{
		{"http://localhost:11434", `; OpenAI-compatible servers usually serve under /v1: try base_url = "http://localhost:11434/v1"`},
		{"http://localhost:11434/", `try base_url = "http://localhost:11434/v1"`},
		{"http://localhost:8080/api", `try base_url = "http://localhost:8080/api/v1"`},
		{"http://localhost:11434/v1", ""},
		{"https://openrouter.ai/api/v1/", ""},
		{"https://generativelanguage.googleapis.com/v1beta/openai", ""},
		{"https://myres.openai.azure.com", ""},
	} {
		got := versionHint(c.base)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("versionHint(%q) = %q, want %q", c.base, got, c.want)
		}
	}

	// Through a 404 from a server reached without /v1, and with it.
	for _, withV1 := range []bool{false, true} {
		srv := newFakeServer(t, status(404, "404 page not found"))
		base := srv.URL
		if withV1 {
			base = srv.base()
		}
		p, s := newProvider(t, Options{BaseURL: base, Model: "x"})
		_, err := p.Complete(context.Background(), ask("hi"))
		if !errors.Is(err, shell.ErrModelPermanent) || len(srv.recorded()) != 1 || len(s.recorded()) != 0 {
			t.Fatalf("err = %v after %d requests; want a permanent error at once", err, len(srv.recorded()))
		}
		want := fmt.Sprintf(`model "x" or endpoint not found at %s (404) (the server said: 404 page not found); OpenAI-compatible servers usually serve under /v1: try base_url = "%s/v1"`, srv.URL, srv.URL)
		if withV1 {
			want = fmt.Sprintf(`model "x" or endpoint not found at %s/v1 (404) (the server said: 404 page not found)`, srv.URL)
		}
		if err.Error() != want {
			t.Errorf("err = %v\nwant  %s", err, want)
		}
	}
}

func TestRetryPolicyFromOptions(t *testing.T) {
	def := shell.DefaultModelRetry
	with := func(f func(*shell.RetryPolicy)) shell.RetryPolicy {
		p := def
		f(&p)
		return p
	}
	for _, c := range []struct {
		name string
		opts Options
		want shell.RetryPolicy
	}{
		{"defaults", Options{}, def},
		{"max retries", Options{MaxRetries: 2}, with(func(p *shell.RetryPolicy) { p.Attempts = 3 })},
		{"no retries", Options{MaxRetries: -1}, with(func(p *shell.RetryPolicy) { p.Attempts = 1 })},
		{"the policy wins", Options{MaxRetries: 2, Retry: shell.RetryPolicy{Attempts: 7}}, with(func(p *shell.RetryPolicy) { p.Attempts = 7 })},
		{"old backoff names", Options{BackoffBase: time.Second, MaxBackoff: time.Minute},
			with(func(p *shell.RetryPolicy) { p.Backoff, p.MaxBackoff = time.Second, time.Minute })},
		{"the policy's backoff wins", Options{BackoffBase: time.Second, Retry: shell.RetryPolicy{Backoff: 3 * time.Second}},
			with(func(p *shell.RetryPolicy) { p.Backoff = 3 * time.Second })},
		{"a full policy", Options{Retry: shell.RetryPolicy{Attempts: 6, Backoff: time.Second, MaxBackoff: 20 * time.Second, MaxElapsed: 3 * time.Minute, Jitter: -1}},
			shell.RetryPolicy{Attempts: 6, Backoff: time.Second, MaxBackoff: 20 * time.Second, MaxElapsed: 3 * time.Minute, Jitter: -1}},
	} {
		c.opts.Model = "m"
		o, errs := c.opts.withDefaults()
		if len(errs) > 0 || o.Retry != c.want {
			t.Errorf("%s: policy = %+v, %v; want %+v", c.name, o.Retry, errs, c.want)
		}
	}
}

func TestOptionsChecked(t *testing.T) {
	for _, o := range []Options{
		{},
		{Model: "m", BaseURL: "localhost:11434"},
		{Model: "m", MaxRetries: -2},
		{Model: "m", Timeout: -time.Second},
		{Model: "m", Retry: shell.RetryPolicy{Attempts: -1}},
		{Model: "m", Retry: shell.RetryPolicy{Jitter: 1.5}},
		{Model: "m", Retry: shell.RetryPolicy{MaxElapsed: -time.Second}},
		{Model: "m", BackoffBase: -time.Second},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}
