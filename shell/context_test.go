package shell_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/openai"
	"github.com/stepwise-agent/stepwise/store"
)

// A provider that refuses a request as longer than its context window (a
// 400 with OpenAI's context_length_exceeded, from an in-process server
// speaking the chat-completions wire format): the run does not fail; the
// conversation is compacted (its old results elided) and the request made
// again, once, and the run completes. The refusal and the retry are
// recorded, and the run replays.
func TestContextLengthRefusalCompactsAndRetries(t *testing.T) {
	const window = 6000 // bytes of request body the fake accepts
	var refused, calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if len(body) > window {
			refused.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is 1500 tokens. However, your messages resulted in %d tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, len(body)/4)
			return
		}
		var raw struct {
			Messages []map[string]any `json:"messages"`
		}
		_ = json.Unmarshal(body, &raw)
		n := 0
		for _, m := range raw.Messages {
			if m["role"] == "tool" {
				n++
			}
		}
		if n < 3 {
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"page","arguments":"{\"x\": \"%d\"}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17}}`, n, n)
			return
		}
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"read three pages"}}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`)
	}))
	defer srv.Close()
	p, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	page := fnTool{spec: core.Tool{Name: "page", Parameters: json.RawMessage(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
		return core.ToolResult{CallID: c.ID, Output: strings.Repeat("page text ", 250)}
	}}
	db := openStore(t)
	ag := newAgent(t, p, page)
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "read the pages")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "read three pages" {
		t.Fatalf("%+v %v", out, err)
	}
	if refused.Load() != 1 {
		t.Fatalf("the provider refused %d requests, want 1 (then the compacted retry went through)", refused.Load())
	}
	var overflowed, compacted bool
	_ = db.Steps(context.Background(), out.RunID, func(rec store.StepRecord) error {
		if r, ok := rec.Result.(core.ModelReply); ok && r.Overflow && strings.Contains(r.Error, "context") {
			overflowed = true
		}
		if m, ok := rec.Action.(core.RequestModelCall); ok && len(m.Messages) > 0 && strings.Contains(core.DescribeAction(m), "compacted view") {
			compacted = true
		}
		return nil
	})
	if !overflowed || !compacted {
		t.Fatalf("recorded: refusal %v, compacted request %v", overflowed, compacted)
	}
	rep, err := shell.Replay(context.Background(), db, out.RunID, ag.Config)
	if err != nil || rep.Diverged != nil {
		t.Fatalf("replay: %+v %v", rep.Diverged, err)
	}
}
