package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/openai"
	"github.com/stepwise-agent/stepwise/store"
)

// An agent with an output schema: the chat-completions request asks for it
// natively (response_format json_schema, from an in-process server speaking
// the wire format), an answer that does not fit is sent back, the one that
// fits is the run's output, and OutputAs decodes it into a struct.
func TestStructuredOutputOverChatCompletions(t *testing.T) {
	const schema = `{"type":"object","properties":{"label":{"type":"string","enum":["spam","ham"]},"score":{"type":"number"}},"required":["label","score"]}`
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ResponseFormat struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		_ = json.Unmarshal(body, &req)
		if req.ResponseFormat.Type != "json_schema" || req.ResponseFormat.JSONSchema.Name != "output" || string(req.ResponseFormat.JSONSchema.Schema) != schema {
			t.Errorf("response_format not sent: %s", body)
		}
		answer := `{\"label\":\"maybe\",\"score\":1}`
		if calls.Add(1) > 1 {
			answer = `{\"score\":0.9,\"label\":\"spam\"}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`+answer+`"}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer srv.Close()
	p, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ag := newAgent(t, p)
	ag.Config.Output = &core.OutputPolicy{Schema: []byte(schema)}
	db := openStore(t)
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "win a prize!!!")
	if err != nil || out.Status != store.StatusCompleted || string(out.Output) != `{"label":"spam","score":0.9}` {
		t.Fatalf("%+v %v", out, err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls, want 2 (one correction)", calls.Load())
	}
	type verdict struct {
		Label string  `json:"label"`
		Score float64 `json:"score"`
	}
	v, err := shell.OutputAs[verdict](out)
	if err != nil || v != (verdict{"spam", 0.9}) {
		t.Fatalf("OutputAs: %+v %v", v, err)
	}
	if _, err := shell.OutputAs[verdict](shell.Outcome{RunID: "r", Status: store.StatusFailed}); !errors.Is(err, shell.ErrNoOutput) {
		t.Fatalf("no output: %v", err)
	}
	rec, _ := db.LoadLatest(context.Background(), out.RunID)
	if c, ok := rec.Action.(core.Complete); !ok || string(c.Output) != string(out.Output) {
		t.Fatalf("the stored step's output: %+v", rec.Action)
	}
}
