package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/openai"
	"github.com/stepwise-agent/stepwise/shell/models/script"
	"github.com/stepwise-agent/stepwise/shell/tools"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

func openStore(t *testing.T) *sqlite.SQLite {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func scripted(t *testing.T, lines ...string) shell.ModelProvider {
	t.Helper()
	p, err := script.Parse(strings.NewReader(strings.Join(lines, "\n")), t.Name()+".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fnTool is a test tool whose behaviour is a function.
type fnTool struct {
	spec core.Tool
	run  func(ctx context.Context, c core.ToolCall) core.ToolResult
}

func (f fnTool) Spec() core.Tool { return f.spec }
func (f fnTool) Run(ctx context.Context, c core.ToolCall, _ shell.RunContext) core.ToolResult {
	return f.run(ctx, c)
}

const anyArgs = `{"type":"object","properties":{"x":{"type":"string"}}}`

func newAgent(t *testing.T, model shell.ModelProvider, ts ...shell.Tool) *shell.Agent {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Name = "test-agent"
	ag := &shell.Agent{Config: cfg, Models: map[core.ModelRole]shell.ModelProvider{core.Primary: model}, Tools: map[string]shell.Tool{}, Source: []byte(`{}`)}
	for _, tool := range ts {
		ag.Config.Tools = append(ag.Config.Tools, tool.Spec())
		ag.Tools[tool.Spec().Name] = tool
	}
	return ag
}

func external(name string) core.Tool {
	return core.Tool{Name: name, Mode: core.ModeExternal, Parameters: json.RawMessage(anyArgs)}
}

func addTool(t *testing.T) shell.Tool {
	t.Helper()
	tool, err := tools.Command(tools.CommandSpec{
		Name: "add", Argv: []string{"expr", "{{a}}", "+", "{{b}}"}, Idempotent: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestRunWithARealCommandToolCompletesAndReplays(t *testing.T) {
	db := openStore(t)
	ag := newAgent(t, scripted(t,
		`{"tool_calls":[{"id":"a1","name":"add","arguments":{"a":2,"b":40}},{"id":"a2","name":"add","arguments":{"a":1,"b":1}}]}`,
		`{"text":"42 and 2"}`), addTool(t))
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "add things")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != store.StatusCompleted || out.Answer != "42 and 2" || out.Steps != 4 {
		t.Fatalf("outcome = %+v", out)
	}
	rec, err := db.LoadLatest(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleTool {
			outputs = append(outputs, m.CallID+"="+strings.TrimSpace(m.Content))
		}
	}
	if strings.Join(outputs, ",") != "a1=42,a2=2" {
		t.Fatalf("tool outputs = %v", outputs)
	}
	info, _ := db.Run(context.Background(), out.RunID)
	if info.Status != store.StatusCompleted || info.Answer != "42 and 2" {
		t.Fatalf("stored run = %+v", info)
	}
	rep, err := shell.Replay(context.Background(), db, out.RunID, ag.Config)
	if err != nil || rep.Diverged != nil || rep.Steps != 4 {
		t.Fatalf("replay = %+v, %v", rep, err)
	}
	changed := ag.Config
	changed.Limits.MaxSteps = 2
	rep, err = shell.Replay(context.Background(), db, out.RunID, changed)
	if err != nil || rep.Diverged == nil || rep.Diverged.Seq != 3 || !strings.Contains(rep.Diverged.Replayed, "max_steps") {
		t.Fatalf("replay with a lower limit = %+v, %v", rep.Diverged, err)
	}
}

func TestExternalToolsPauseTwiceAndRefuseBadResults(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t,
		`{"tool_calls":[{"id":"e1","name":"ask","arguments":{"x":"first"}},{"id":"e2","name":"ask","arguments":{"x":"second"}}]}`,
		`{"tool_calls":[{"id":"e3","name":"ask","arguments":{"x":"third"}}]}`,
		`{"text":"done"}`))
	ag.Config.Tools = []core.Tool{external("ask")}
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != store.StatusAwaitingToolResults || len(out.Pending) != 2 || out.Pending[0].ID != "e1" || string(out.Pending[1].Args) != `{"x":"second"}` {
		t.Fatalf("first pause = %+v", out)
	}
	before, _ := db.LoadLatest(ctx, out.RunID)
	for _, bad := range [][]core.ToolResult{
		{{CallID: "e1", Output: "a"}, {CallID: "zz", Output: "b"}},
		{{CallID: "e1", Output: "a"}, {CallID: "e1", Output: "b"}, {CallID: "e2"}},
		{{CallID: "e1", Output: "a"}},
	} {
		if _, err := r.Submit(ctx, ag, out.RunID, shell.Answers{Results: bad}); err == nil {
			t.Fatalf("bad results %v accepted", bad)
		}
		after, _ := db.LoadLatest(ctx, out.RunID)
		if after.Seq != before.Seq {
			t.Fatalf("a refused submit wrote step %d", after.Seq)
		}
	}
	out, err = r.Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "e2", Error: "no"}, {CallID: "e1", Output: "yes"}}})
	if err != nil || out.Status != store.StatusAwaitingToolResults || out.Pending[0].ID != "e3" {
		t.Fatalf("second pause = %+v, %v", out, err)
	}
	// Resume without results keeps a paused run paused.
	if again, err := r.Resume(ctx, ag, out.RunID); err != nil || again.Status != store.StatusAwaitingToolResults {
		t.Fatalf("resume of a paused run = %+v, %v", again, err)
	}
	out, err = r.Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "e3", Output: "ok"}}})
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "done" {
		t.Fatalf("end = %+v, %v", out, err)
	}
	if _, err := r.Submit(ctx, ag, out.RunID, shell.Answers{}); !errors.Is(err, shell.ErrNotPaused) {
		t.Fatalf("submit to a completed run: %v", err)
	}
	// Results for a pause that was answered already: the caller lost a race.
	if _, err := r.Submit(ctx, ag, out.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "e3", Output: "again"}}}); !errors.Is(err, shell.ErrAlreadyAnswered) {
		t.Fatalf("submit for an answered pause: %v", err)
	}
}

func TestParallelCallsRunConcurrentlyAndKeepModelOrder(t *testing.T) {
	db := openStore(t)
	var running, peak atomic.Int32
	slow := fnTool{spec: core.Tool{Name: "slow", Parameters: json.RawMessage(anyArgs)}, run: func(ctx context.Context, c core.ToolCall) core.ToolResult {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		var a struct{ X string }
		_ = json.Unmarshal(c.Args, &a)
		d, _ := time.ParseDuration(a.X)
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return core.ToolResult{Output: "slept " + a.X}
	}}
	ag := newAgent(t, scripted(t,
		`{"tool_calls":[{"id":"s1","name":"slow","arguments":{"x":"150ms"}},{"id":"s2","name":"slow","arguments":{"x":"1ms"}},{"id":"s3","name":"slow","arguments":{"x":"50ms"}}]}`,
		`{"text":"ok"}`), slow)
	ag.Config.Policy.Parallel = true
	out, err := shell.NewRunner(db, nil).Start(context.Background(), ag, "go")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if peak.Load() < 2 {
		t.Fatalf("parallel calls never overlapped (peak %d)", peak.Load())
	}
	rec, _ := db.LoadLatest(context.Background(), out.RunID)
	var order []string
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleTool {
			order = append(order, m.CallID+":"+m.Content)
		}
	}
	if strings.Join(order, ",") != "s1:slept 150ms,s2:slept 1ms,s3:slept 50ms" {
		t.Fatalf("results out of model order: %v", order)
	}
}

func TestToolTimeoutPanicAndOversizeAreToolErrors(t *testing.T) {
	db := openStore(t)
	hang := fnTool{spec: core.Tool{Name: "hang"}, run: func(ctx context.Context, c core.ToolCall) core.ToolResult {
		<-ctx.Done()
		return core.ToolResult{}
	}}
	boom := fnTool{spec: core.Tool{Name: "boom"}, run: func(ctx context.Context, c core.ToolCall) core.ToolResult { panic("kaboom") }}
	big := fnTool{spec: core.Tool{Name: "big"}, run: func(ctx context.Context, c core.ToolCall) core.ToolResult {
		return core.ToolResult{Output: strings.Repeat("é", 5000)}
	}}
	ag := newAgent(t, scripted(t,
		`{"tool_calls":[{"id":"h","name":"hang"},{"id":"b","name":"boom"},{"id":"g","name":"big"}]}`,
		`{"text":"survived"}`), hang, boom, big)
	ag.ToolTimeouts = map[string]time.Duration{"hang": 50 * time.Millisecond}
	r := shell.NewRunner(db, &shell.Options{MaxToolOutput: 1000})
	out, err := r.Start(context.Background(), ag, "go")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "survived" {
		t.Fatalf("%+v %v", out, err)
	}
	intents, _ := db.Intents(context.Background(), out.RunID, 2)
	got := map[string]core.ToolResult{}
	for _, in := range intents {
		got[in.CallID] = *in.Result
	}
	if !strings.Contains(got["h"].Error, "timed out after 50ms") {
		t.Errorf("hang: %+v", got["h"])
	}
	if !strings.Contains(got["b"].Error, "crashed: kaboom") {
		t.Errorf("boom: %+v", got["b"])
	}
	if len(got["g"].Output) > 1100 || !strings.Contains(got["g"].Output, "output capped at") {
		t.Errorf("big: %d bytes", len(got["g"].Output))
	}
}

func TestCancelInterruptsAndResumeRespectsIdempotency(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			db := openStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			var calls atomic.Int32
			started := make(chan struct{}, 1)
			charge := fnTool{spec: core.Tool{Name: "charge", Idempotent: idempotent}, run: func(tctx context.Context, c core.ToolCall) core.ToolResult {
				if calls.Add(1) == 1 {
					started <- struct{}{}
					<-tctx.Done() // interrupted mid-call
					return core.ToolResult{Error: "interrupted"}
				}
				return core.ToolResult{Output: "charged"}
			}}
			ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"c1","name":"charge"}]}`, `{"text":"end"}`), charge)
			r := shell.NewRunner(db, nil)
			go func() { <-started; cancel() }()
			out, err := r.Start(ctx, ag, "go")
			if err != nil || out.Status != store.StatusInterrupted {
				t.Fatalf("interrupted run = %+v, %v", out, err)
			}
			if info, _ := db.Run(context.Background(), out.RunID); info.Status != store.StatusInterrupted {
				t.Fatalf("stored status %s", info.Status)
			}
			out, err = r.Resume(context.Background(), ag, out.RunID)
			if err != nil || out.Status != store.StatusCompleted {
				t.Fatalf("resumed = %+v, %v", out, err)
			}
			rec, _ := db.LoadLatest(context.Background(), out.RunID)
			var toolMsg string
			for _, m := range rec.State.Messages {
				if m.Role == core.RoleTool {
					toolMsg = m.Content
				}
			}
			if idempotent && (calls.Load() != 2 || toolMsg != "charged") {
				t.Fatalf("idempotent call not re-run: calls=%d msg=%q", calls.Load(), toolMsg)
			}
			if !idempotent && (calls.Load() != 1 || !strings.Contains(toolMsg, "outcome unknown")) {
				t.Fatalf("non-idempotent call re-run or not reported: calls=%d msg=%q", calls.Load(), toolMsg)
			}
		})
	}
}

func TestRunDeadlineCancelsTheRun(t *testing.T) {
	db := openStore(t)
	hang := fnTool{spec: core.Tool{Name: "hang"}, run: func(ctx context.Context, c core.ToolCall) core.ToolResult {
		<-ctx.Done()
		return core.ToolResult{Error: ctx.Err().Error()}
	}}
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"h","name":"hang"}]}`), hang)
	out, err := shell.NewRunner(db, &shell.Options{RunTimeout: 50 * time.Millisecond}).Start(context.Background(), ag, "go")
	if err != nil || out.Status != store.StatusCancelled || out.Failure.Code != core.FailCancelled || !strings.Contains(out.Failure.Reason, "deadline") {
		t.Fatalf("%+v %v", out, err)
	}
	if info, _ := db.Run(context.Background(), out.RunID); info.Status != store.StatusCancelled || info.Lease.Owner != "" {
		t.Fatalf("stored: status %s, lease %+v", info.Status, info.Lease)
	}
}

func TestForkWithADifferentToolResult(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"a1","name":"add","arguments":{"a":2,"b":2}}]}`, `{"text":"the sum is in"}`), addTool(t))
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusCompleted {
		t.Fatal(out, err)
	}
	fork, err := r.Fork(ctx, ag, out.RunID, 2, core.ToolResults{Results: []core.ToolResult{{CallID: "a1", Output: "5"}}})
	if err != nil || fork.Status != store.StatusCompleted || fork.RunID == out.RunID {
		t.Fatalf("fork = %+v, %v", fork, err)
	}
	info, _ := db.Run(ctx, fork.RunID)
	rec, _ := db.LoadLatest(ctx, fork.RunID)
	tool := rec.State.Messages[2]
	if info.ParentID != out.RunID || info.ParentStep != 2 || tool.Role != core.RoleTool || tool.Content != "5" {
		t.Fatalf("fork info %+v, tool message %s", info, core.DescribeMessage(tool))
	}
	if _, err := r.Fork(ctx, ag, out.RunID, 99, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fork at a missing step: %v", err)
	}
}

// fakeOpenAI speaks the chat-completions wire format: a tool call first, then
// a text answer that quotes the tool result it was sent.
func fakeOpenAI(t *testing.T) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var raw struct {
			Messages []map[string]any `json:"messages"`
			Tools    []map[string]any `json:"tools"`
		}
		if err := json.Unmarshal(body, &raw); err != nil || len(raw.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		last := raw.Messages[len(raw.Messages)-1]
		w.Header().Set("Content-Type", "application/json")
		if last["role"] == "tool" {
			fmt.Fprintf(w, `{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"The tool said %v"}}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`, strings.TrimSpace(fmt.Sprint(last["content"])))
			return
		}
		if len(raw.Tools) != 1 {
			t.Errorf("tools not sent natively: %v", raw.Tools)
		}
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_xyz","type":"function","function":{"name":"add","arguments":"{\"a\": 20, \"b\": 22}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17}}`)
	}))
}

func TestOpenAIProviderEndToEnd(t *testing.T) {
	srv := fakeOpenAI(t)
	defer srv.Close()
	t.Setenv("TEST_OPENAI_KEY", "test-key")
	p, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m", APIKeyEnv: "TEST_OPENAI_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	db := openStore(t)
	out, err := shell.NewRunner(db, nil).Start(context.Background(), newAgent(t, p, addTool(t)), "add 20 and 22")
	if err != nil || out.Status != store.StatusCompleted || out.Answer != "The tool said 42" {
		t.Fatalf("%+v %v", out, err)
	}
	rec, _ := db.LoadLatest(context.Background(), out.RunID)
	if rec.State.Counters.PromptTokens != 30 || rec.State.Counters.CompletionTokens != 12 {
		t.Fatalf("usage not recorded: %+v", rec.State.Counters)
	}
	info, _ := db.Run(context.Background(), out.RunID)
	if strings.Contains(string(info.Config), "test-key") {
		t.Fatal("the API key reached the database")
	}
}

func TestManyConcurrentRunsOnOneDatabase(t *testing.T) {
	db := openStore(t)
	r := shell.NewRunner(db, nil)
	const runs = 40
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ag := newAgent(t, scripted(t,
				fmt.Sprintf(`{"tool_calls":[{"id":"a","name":"echo","arguments":{"x":"%d"}}]}`, i),
				fmt.Sprintf(`{"text":"run %d done"}`, i)),
				fnTool{spec: core.Tool{Name: "echo", Parameters: json.RawMessage(anyArgs)}, run: func(_ context.Context, c core.ToolCall) core.ToolResult {
					return core.ToolResult{Output: string(c.Args)}
				}})
			out, err := r.Start(context.Background(), ag, "go")
			if err == nil && (out.Status != store.StatusCompleted || out.Answer != fmt.Sprintf("run %d done", i)) {
				err = fmt.Errorf("run %d: %+v", i, out)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := db.ListRuns(context.Background(), store.Filter{Status: store.StatusCompleted})
	if err != nil || len(list) != runs {
		t.Fatalf("%d completed runs stored, %v", len(list), err)
	}
}

func TestParseResults(t *testing.T) {
	ans, err := shell.ParseResults([]byte(`[{"tool_call_id":"a","result":"x"},{"tool_call_id":"b","result":{"n":1}},{"tool_call_id":"c","error":"no"},{"tool_call_id":"d","not_run":true},{"tool_call_id":"e","result":""}]`))
	res := ans.Results
	if err != nil || len(res) != 4 || res[0].Output != "x" || res[1].Output != `{"n":1}` || res[2].Error != "no" || res[3].Output != "" ||
		len(ans.NotRun) != 1 || ans.NotRun[0] != "d" {
		t.Fatalf("%+v %v", ans, err)
	}
	for _, bad := range []string{
		`{}`, `[{"result":"x"}]`, `[{"tool_call_id":"a","bogus":1}]`, `[{"tool_call_id":"a","result":"x","error":"y"}]`,
		`[{"tool_call_id":""}]`,
		`[{"tool_call_id":"a"}]`,                                            // neither result nor error
		`[{"tool_call_id":"a","error":""}]`,                                 // an empty error
		`[{"tool_call_id":"a","not_run":false}]`,                            // not_run must be true
		`[{"tool_call_id":"a","result":1},{"tool_call_id":"a","result":2}]`, // twice
	} {
		if _, err := shell.ParseResults([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestForkAtAPauseIsPaused(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	ag := newAgent(t, scripted(t, `{"tool_calls":[{"id":"e1","name":"ask","arguments":{"x":"q"}}]}`, `{"text":"done"}`))
	ag.Config.Tools = []core.Tool{external("ask")}
	r := shell.NewRunner(db, nil)
	out, err := r.Start(ctx, ag, "go")
	if err != nil || out.Status != store.StatusAwaitingToolResults {
		t.Fatal(out, err)
	}
	fork, err := r.Fork(ctx, ag, out.RunID, out.Steps, nil)
	if err != nil || fork.Status != store.StatusAwaitingToolResults || len(fork.Pending) != 1 {
		t.Fatalf("fork = %+v, %v", fork, err)
	}
	if info, _ := db.Run(ctx, fork.RunID); info.Status != store.StatusAwaitingToolResults {
		t.Fatalf("stored fork status %s", info.Status)
	}
	done, err := r.Submit(ctx, ag, fork.RunID, shell.Answers{Results: []core.ToolResult{{CallID: "e1", Output: "a"}}})
	if err != nil || done.Status != store.StatusCompleted {
		t.Fatalf("fork after submit = %+v, %v", done, err)
	}
}
