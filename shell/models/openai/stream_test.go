package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	mt "github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/shell"
	pt "github.com/stepwise-agent/stepwise/shell/models/internal/providertest"
)

// Chunks as OpenAI streams them: data-only events, the first with the
// role, the usage in a last chunk with no choices, then [DONE].
func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-S1","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}],"usage":null}`
}

const usageChunk = `{"id":"chatcmpl-S1","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":8,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}`

var textStream = mt.Data(
	chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
	chunk(`{"content":"Paris is"}`, ""),
	chunk(`{"content":" the capital"}`, ""),
	chunk(`{"content":" of France."}`, ""),
	chunk(`{}`, "stop"),
	usageChunk,
	"[DONE]",
)

// The same completion, unstreamed.
const textWhole = `{"id":"chatcmpl-S1","object":"chat.completion","created":1718000000,"model":"gpt-4o-mini-2024-07-18",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Paris is the capital of France.","refusal":null},"logprobs":null,"finish_reason":"stop"}],
 "usage":{"prompt_tokens":21,"completion_tokens":8,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}`

// Two tool calls, each split across chunks, as OpenAI sends them: the
// first piece of a call has its id, type and name; the arguments follow
// in pieces with only the index.
var toolStream = mt.Data(
	chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_Ab1","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null}`, ""),
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}`, ""),
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Pa"}}]}`, ""),
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ris\"}"}}]}`, ""),
	chunk(`{"tool_calls":[{"index":1,"id":"call_Cd2","type":"function","function":{"name":"get_time","arguments":""}}]}`, ""),
	chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"Europe/Paris\"}"}}]}`, ""),
	chunk(`{}`, "tool_calls"),
	`{"id":"chatcmpl-S1","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":90,"completion_tokens":45,"total_tokens":135}}`,
	"[DONE]",
)

const toolWhole = `{"id":"chatcmpl-S1","object":"chat.completion","created":1718000000,"model":"gpt-4o-mini-2024-07-18",
 "choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
   {"id":"call_Ab1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
   {"id":"call_Cd2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"Europe/Paris\"}"}}]},
   "finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":90,"completion_tokens":45,"total_tokens":135}}`

func streamProvider(t *testing.T, srv *mt.Server, opts Options) (*Provider, *mt.Sleeps) {
	t.Helper()
	s := &mt.Sleeps{}
	opts.BaseURL, opts.Model = srv.URL+"/v1", "gpt-4o-mini"
	opts.Sleep, opts.Now, opts.Rand = s.Sleep, s.Now, func() float64 { return 0.5 }
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func weatherTools() []core.Tool {
	return []core.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "get_time"},
	}
}

// TestStreamedReplyIsTheUnstreamedReply: the text and the tool calls of a
// stream, split across chunks, assemble into the very reply the same
// completion gives unstreamed, usage details included; the pieces reach
// OnDelta in order.
func TestStreamedReplyIsTheUnstreamedReply(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream []mt.Event
		whole  string
	}{
		{"text", textStream, textWhole},
		{"tool calls", toolStream, toolWhole},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := mt.New(t, mt.Reply{Events: c.stream}, mt.Reply{Body: c.whole})
			rec := &pt.Recorder{}
			req := ask("hi")
			req.Tools = weatherTools()
			p, _ := streamProvider(t, srv, Options{})
			streamed, err := p.Complete(context.Background(), rec.Request(req))
			if err != nil {
				t.Fatalf("streamed: %v", err)
			}
			q, _ := streamProvider(t, srv, Options{NoStream: true})
			whole, err := q.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("unstreamed: %v", err)
			}
			if !reflect.DeepEqual(streamed, whole) {
				t.Errorf("streamed  %+v\nunstreamed %+v", streamed, whole)
			}
			reqs := srv.Requests()
			if !strings.Contains(string(reqs[0].Body), `"stream":true`) || strings.Contains(string(reqs[1].Body), `"stream":true`) {
				t.Errorf("requests: %s\n%s", reqs[0].Body, reqs[1].Body)
			}
			if got := rec.Spelled(shell.DeltaText); got != streamed.Text {
				t.Errorf("deltas spell %q, the reply is %q", got, streamed.Text)
			}
			if c.name == "text" {
				if want := (core.Usage{PromptTokens: 21, CompletionTokens: 8, CachedTokens: 5, ReasoningTokens: 2}); streamed.Usage != want {
					t.Errorf("usage = %+v, want %+v", streamed.Usage, want)
				}
				if len(rec.Deltas) != 3 {
					t.Errorf("deltas = %+v, want the 3 pieces", rec.Deltas)
				}
				return
			}
			var args [2]string
			var names []string
			for _, d := range rec.Deltas {
				if d.Kind == shell.DeltaCall {
					args[d.Call] += d.Text
					if d.Name != "" {
						names = append(names, d.Name)
					}
				}
			}
			if args[0] != `{"city": "Paris"}` || args[1] != `{"tz":"Europe/Paris"}` || fmt.Sprint(names) != "[get_weather get_time]" {
				t.Errorf("call deltas: args %q, names %v", args, names)
			}
		})
	}
}

// TestStreamFailuresAreRetried: a stream cut off mid-reply, one that ends
// without finishing, a chunk that is not JSON and an error sent in the
// stream are each retried, reported to OnRetry with their reason; the
// reply is the next attempt's whole reply, not a mix.
func TestStreamFailuresAreRetried(t *testing.T) {
	partial := mt.Data(chunk(`{"role":"assistant","content":"Lyon is"}`, ""), chunk(`{"content":" the cap"}`, ""))
	for _, c := range []struct {
		name   string
		first  mt.Reply
		reason string
	}{
		{"connection cut", mt.Reply{Events: partial, Cut: true}, "the stream broke off: unexpected EOF"},
		{"ended early", mt.Reply{Events: append(partial, mt.Event{Data: "[DONE]"})}, "the stream ended before the reply did"},
		{"malformed chunk", mt.Reply{Events: append(partial, mt.Event{Data: `{"choices":[{"index":0,"delta":{"content":`})}, "a chunk of the stream is not a chat completion chunk"},
		{"error in the stream", mt.Reply{Events: append(partial, mt.Event{Data: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`})},
			"the server sent an error in the stream: The server had an error while processing your request."},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := mt.New(t, c.first, mt.Reply{Events: textStream})
			p, s := streamProvider(t, srv, Options{})
			rec := &pt.Recorder{}
			got, err := p.Complete(context.Background(), rec.Request(ask("hi")))
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got.Text != "Paris is the capital of France." {
				t.Errorf("reply %q, want the second attempt's", got.Text)
			}
			if len(rec.Retries) != 1 || rec.Retries[0].Attempt != 1 || !strings.Contains(rec.Retries[0].Reason, c.reason) {
				t.Fatalf("retries = %+v, want one naming %q", rec.Retries, c.reason)
			}
			if w := s.Waits(); len(w) != 1 || w[0] != rec.Retries[0].Wait || w[0] != 500*time.Millisecond {
				t.Errorf("waits %v, retry reported %v", w, rec.Retries[0].Wait)
			}
			if len(srv.Requests()) != 2 {
				t.Errorf("%d requests, want 2", len(srv.Requests()))
			}
			// OnDelta saw the failed attempt's pieces, then the retry, then
			// the whole second reply.
			if got := rec.Spelled(shell.DeltaText); got != "Lyon is the capParis is the capital of France." {
				t.Errorf("deltas spell %q", got)
			}
		})
	}
}

// TestStreamStatusErrors: a 429 with Retry-After is honoured and reported,
// a 401 fails at once, and retries that run out stall the run (a
// TransientError), whether the request asked for a stream or not.
func TestStreamStatusErrors(t *testing.T) {
	srv := mt.New(t, mt.Reply{Status: 429, Body: rateLimitError, Header: map[string]string{"Retry-After": "7"}}, mt.Reply{Events: textStream})
	p, s := streamProvider(t, srv, Options{})
	rec := &pt.Recorder{}
	if _, err := p.Complete(context.Background(), rec.Request(ask("hi"))); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if w := s.Waits(); !reflect.DeepEqual(w, []time.Duration{7700 * time.Millisecond}) {
		t.Errorf("waits %v, want [7.7s]", w)
	}
	if len(rec.Retries) != 1 || !strings.HasPrefix(rec.Retries[0].Reason, "status 429 Too Many Requests: Rate limit reached") {
		t.Errorf("retries %+v", rec.Retries)
	}

	srv = mt.New(t, mt.Reply{Status: 401, Body: badKeyError})
	p, s = streamProvider(t, srv, Options{})
	_, err := p.Complete(context.Background(), ask("hi"))
	if !errors.Is(err, shell.ErrModelPermanent) || len(srv.Requests()) != 1 || len(s.Waits()) != 0 {
		t.Errorf("401: err = %v after %d requests", err, len(srv.Requests()))
	}

	srv = mt.New(t, mt.Reply{Events: textStream[:2], Cut: true})
	p, _ = streamProvider(t, srv, Options{Retry: shell.RetryPolicy{Attempts: 2}})
	_, err = p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) || te.Attempts != 2 || !strings.Contains(err.Error(), "gave up after 2 attempts (last: the stream broke off") {
		t.Errorf("err = %v, want a TransientError after 2 attempts naming the broken stream", err)
	}
}

// TestStreamIdleTimeout: a stream that stops sending is given up after
// the timeout and retried; one that keeps sending is not cut.
func TestStreamIdleTimeout(t *testing.T) {
	stalled := mt.Reply{Events: textStream, Before: func(i int) {
		if i == 2 {
			time.Sleep(time.Second) // longer than the timeout below; the client gives up first
		}
	}}
	srv := mt.New(t, stalled, mt.Reply{Events: textStream})
	p, _ := streamProvider(t, srv, Options{Timeout: 100 * time.Millisecond})
	rec := &pt.Recorder{}
	got, err := p.Complete(context.Background(), rec.Request(ask("hi")))
	if err != nil || got.Text != "Paris is the capital of France." {
		t.Fatalf("Complete = %+v, %v", got, err)
	}
	if len(rec.Retries) != 1 || !strings.Contains(rec.Retries[0].Reason, "received nothing for 100ms (the per-attempt timeout)") {
		t.Errorf("retries %+v", rec.Retries)
	}
}
