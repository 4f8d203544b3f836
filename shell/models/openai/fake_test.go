package openai

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fakeServer is an in-process chat-completions endpoint. It records every
// request as it arrived on the wire and answers from a queue of replies; the
// last reply repeats once the queue is drained.
type fakeServer struct {
	*httptest.Server
	t *testing.T

	mu       sync.Mutex
	replies  []fakeReply
	requests []recorded
}

// fakeReply is one scripted HTTP response. hang makes the handler wait until
// the client gives up on the request instead of answering.
type fakeReply struct {
	status int
	header map[string]string
	body   string
	hang   bool
}

// recorded is one request as the server saw it.
type recorded struct {
	method, path, query string
	header              http.Header
	raw                 []byte
	body                wireRequest
}

// wireRequest decodes a chat-completion request with plain maps, not
// go-openai's types, so the tests check the JSON actually sent.
type wireRequest struct {
	Model               string                       `json:"model"`
	Messages            []map[string]json.RawMessage `json:"messages"`
	Tools               []wireTool                   `json:"tools"`
	Temperature         *float64                     `json:"temperature"`
	MaxTokens           *int                         `json:"max_tokens"`
	MaxCompletionTokens *int                         `json:"max_completion_tokens"`
	Stream              bool                         `json:"stream"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func newFakeServer(t *testing.T, replies ...fakeReply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake server: read body: %v", err)
	}
	rec := recorded{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), raw: raw}
	if err := json.Unmarshal(raw, &rec.body); err != nil {
		f.t.Errorf("fake server: the request is not JSON: %v\n%s", err, raw)
	}
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	rep := f.replies[0]
	if len(f.replies) > 1 {
		f.replies = f.replies[1:]
	}
	f.mu.Unlock()
	if rep.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func (f *fakeServer) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// base is the BaseURL to configure, as for OpenAI: the API root ending in /v1.
func (f *fakeServer) base() string { return f.URL + "/v1" }

func ok(body string) fakeReply { return fakeReply{status: http.StatusOK, body: body} }

func status(code int, body string, header ...string) fakeReply {
	r := fakeReply{status: code, body: body, header: map[string]string{}}
	for i := 0; i+1 < len(header); i += 2 {
		r.header[header[i]] = header[i+1]
	}
	return r
}

// Replies as OpenAI sends them.
const (
	textCompletion = `{
  "id": "chatcmpl-A1",
  "object": "chat.completion",
  "created": 1718000000,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "Paris is the capital of France.", "refusal": null},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {"prompt_tokens": 21, "completion_tokens": 8, "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}},
  "system_fingerprint": "fp_0ba0d124f1"
}`
	toolCallCompletion = `{
  "id": "chatcmpl-A2",
  "object": "chat.completion",
  "created": 1718000001,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_Ab1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_Cd2", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Europe/Paris\""}}
      ],
      "refusal": null
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 90, "completion_tokens": 45, "total_tokens": 135},
  "system_fingerprint": "fp_0ba0d124f1"
}`
	badKeyError    = `{"error": {"message": "Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`
	noModelError   = `{"error": {"message": "The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}`
	badToolError   = `{"error": {"message": "Invalid 'messages[2].tool_calls[0].id': string too long.", "type": "invalid_request_error", "param": "messages[2].tool_calls[0].id", "code": "string_above_max_length"}}`
	rateLimitError = `{"error": {"message": "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`
	overloadError  = `{"error": {"message": "The server is overloaded.", "type": "server_error", "param": null, "code": null}}`
)

// listenFakeServer is newFakeServer listening on addr, a port that was
// free (a refused connection until then).
func listenFakeServer(t *testing.T, addr string, replies ...fakeReply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, replies: replies}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.Listener.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s again: %v", addr, err)
	}
	f.Listener = ln
	f.Start()
	t.Cleanup(f.Close)
	return f
}

// closedPort is an address nothing listens on: connecting to it is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// clockStart is when the fake clock of sleeps starts.
var clockStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// sleeps records the waits between attempts instead of sleeping, and is the
// clock: its time moves on by each wait. onSleep, when set, is called with
// the number of the wait (1, 2, ...) before it returns.
type sleeps struct {
	mu      sync.Mutex
	waits   []time.Duration
	elapsed time.Duration
	onSleep func(n int)
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.elapsed += d
	n, hook := len(s.waits), s.onSleep
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return ctx.Err()
}

func (s *sleeps) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clockStart.Add(s.elapsed)
}

func (s *sleeps) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}
