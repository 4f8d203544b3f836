package script

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

func call(n int) shell.ModelRequest {
	return shell.ModelRequest{Call: n, Messages: []core.Message{{Role: core.RoleUser, Content: "hi"}}}
}

func mustParse(t *testing.T, src string) *Provider {
	t.Helper()
	p, err := Parse(strings.NewReader(src), "test.jsonl")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestParse(t *testing.T) {
	src := `# comment
// another comment

{"text": "hello", "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
   {"tool_calls": [{"id": "c1", "name": "add", "arguments": { "b": 2,  "a": [1, 2] }}, {"name": "now"}], "finish_reason": "tool_calls"}
{"tool_calls": [{"id": "c2", "name": "add", "arguments": "{\"a\": 1,"}]}
{"tool_calls": [{"id": "c3", "name": "add", "arguments": ""}]}
{}
{"error": "503 overloaded"}
`
	p := mustParse(t, src)
	want := []core.ModelReply{
		{Text: "hello", FinishReason: "stop", Usage: core.Usage{PromptTokens: 1, CompletionTokens: 2}},
		{Calls: []core.NativeCall{{ID: "c1", Name: "add", Arguments: `{"b":2,"a":[1,2]}`}, {Name: "now", Arguments: "{}"}}, FinishReason: "tool_calls"},
		{Calls: []core.NativeCall{{ID: "c2", Name: "add", Arguments: `{"a": 1,`}}},
		{Calls: []core.NativeCall{{ID: "c3", Name: "add", Arguments: ""}}},
		{},
	}
	if p.Len() != len(want)+1 {
		t.Fatalf("Len = %d, want %d", p.Len(), len(want)+1)
	}
	for i, w := range want {
		got, err := p.Complete(context.Background(), call(i+1))
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("call %d = %+v\nwant      %+v", i+1, got, w)
		}
	}
	_, err := p.Complete(context.Background(), call(6))
	if !errors.Is(err, ErrScriptError) || errors.Is(err, shell.ErrModelPermanent) {
		t.Fatalf("call 6: err = %v, want a non-permanent scripted error", err)
	}
	if want := `script "test.jsonl" line 9: scripted provider error: 503 overloaded`; err.Error() != want {
		t.Errorf("call 6: err = %q, want %q", err, want)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"bad JSON", "# c\n{\"text\": \"a\"}\n{\"text\": \"b\",}\n", `script "test.jsonl" line 3: not a JSON object`},
		{"incomplete", `{"text": "a"`, `line 1: the JSON object is incomplete`},
		{"unknown key", "\n{\"text\": \"a\", \"txt\": \"b\"}", `line 2: unknown key "txt"`},
		{"unknown call key", `{"tool_calls": [{"name": "a", "args": {}}]}`, `line 1: unknown key "args"`},
		{"unknown usage key", `{"usage": {"total_tokens": 3}}`, `line 1: unknown key "total_tokens"`},
		{"wrong type", `{"text": 5}`, `line 1: "text" must be a string, not a JSON number`},
		{"array arguments", `{"tool_calls": [{"name": "a", "arguments": [1]}]}`, `line 1: tool_calls[0]: arguments must be a JSON object or a string`},
		{"not an object", `["text"]`, `line 1: a reply must be a JSON object`},
		{"two values", `{"text": "a"} {"text": "b"}`, `line 1: more than one JSON value on the line`},
		{"error with text", `{"error": "x", "text": "y"}`, `line 1: "error" cannot be combined with other keys`},
		{"negative delay", `{"text": "a", "delay_ms": -1}`, `line 1: delay_ms -1: want 0 to 600000`},
		{"long delay", `{"text": "a", "delay_ms": 600001}`, `line 1: delay_ms 600001`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.src), "test.jsonl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestAnswersByCallNumber(t *testing.T) {
	p := mustParse(t, `{"text": "one"}
{"text": "two"}
{"text": "three"}`)
	// Out of order and repeated, as after a crash and a resume in a new
	// process: the reply depends on the call number only.
	for _, n := range []int{2, 1, 3, 2, 2} {
		got, err := p.Complete(context.Background(), call(n))
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
		if want := []string{"one", "two", "three"}[n-1]; got.Text != want {
			t.Errorf("call %d = %q, want %q", n, got.Text, want)
		}
	}
}

func TestOffset(t *testing.T) {
	base := mustParse(t, "{\"text\": \"a\"}\n{\"text\": \"b\"}")
	fork := base.WithOffset(4)
	got, err := fork.Complete(context.Background(), call(6))
	if err != nil || got.Text != "b" {
		t.Errorf("call 6 with offset 4 = %q, %v; want reply 2 (b)", got.Text, err)
	}
	if got, err := base.Complete(context.Background(), call(1)); err != nil || got.Text != "a" {
		t.Errorf("WithOffset changed the original: call 1 = %q, %v", got.Text, err)
	}
	_, err = fork.Complete(context.Background(), call(7))
	if want := `script "test.jsonl": no reply for model call 7 (reply 3 with offset 4; the script has 2)`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	_, err = fork.Complete(context.Background(), call(3))
	if !errors.Is(err, shell.ErrModelPermanent) || !strings.Contains(err.Error(), "no reply for model call 3") {
		t.Errorf("a call before the offset: err = %v", err)
	}
}

func TestRunningOut(t *testing.T) {
	p, err := Load("testdata/demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Complete(context.Background(), call(1)); err != nil || len(got.Calls) != 1 || got.Calls[0].Arguments != `{"a":2,"b":3}` {
		t.Errorf("call 1 = %+v, %v", got, err)
	}
	_, err = p.Complete(context.Background(), call(3))
	if want := `script "testdata/demo.jsonl": no reply for model call 3 (the script has 2)`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if !errors.Is(err, shell.ErrModelPermanent) {
		t.Errorf("running out is not permanent: %v", err)
	}
	_, err = p.Complete(context.Background(), call(0))
	if !errors.Is(err, shell.ErrModelPermanent) || !strings.Contains(err.Error(), "ModelRequest.Call") {
		t.Errorf("call 0: err = %v, want it to point at ModelRequest.Call", err)
	}
	if _, err := Load("testdata/missing.jsonl"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestRepliesAreCopies(t *testing.T) {
	p := mustParse(t, `{"tool_calls": [{"id": "c1", "name": "a"}]}`)
	got, _ := p.Complete(context.Background(), call(1))
	got.Calls[0].Name = "changed"
	again, _ := p.Complete(context.Background(), call(1))
	if again.Calls[0].Name != "a" {
		t.Errorf("a caller's change leaked into the script: %+v", again)
	}
}

func TestCancelled(t *testing.T) {
	p := mustParse(t, `{"text": "a"}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Complete(ctx, call(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// A reply with delay_ms takes that long, as a real model does; a call
// cancelled meanwhile returns at once with the context's error.
func TestDelay(t *testing.T) {
	p := mustParse(t, `{"text": "a", "delay_ms": 40}`+"\n"+`{"error": "down", "delay_ms": 60000}`)
	t0 := time.Now()
	if r, err := p.Complete(context.Background(), call(1)); err != nil || r.Text != "a" || time.Since(t0) < 40*time.Millisecond {
		t.Fatalf("delayed reply: %+v %v after %s", r, err, time.Since(t0))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	t0 = time.Now()
	if _, err := p.Complete(ctx, call(2)); !errors.Is(err, context.Canceled) || time.Since(t0) > 30*time.Second {
		t.Fatalf("cancelled delayed call: %v after %s", err, time.Since(t0))
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"text": "hi", "tool_calls": [{"id": "c", "name": "n", "arguments": {"a": 1}}], "usage": {"prompt_tokens": 1}}`)
	f.Add("# c\n{\"error\": \"x\"}\n{\"tool_calls\": [{\"arguments\": \"{\"}]}")
	f.Add(`{"text": 5}`)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(strings.NewReader(src), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), `script "fuzz" `) {
				t.Errorf("error without the script's name: %v", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond) // no delay_ms waits
		defer cancel()
		for n := 1; n <= p.Len()+1; n++ {
			p.Complete(ctx, call(n))
		}
	})
}
