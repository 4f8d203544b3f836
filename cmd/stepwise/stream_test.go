package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/modeltest"
)

// lockedBuffer is a stream a command writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// inProcess runs the CLI in this process through its env, with db as
// its database; stderr may be read while it runs.
func inProcessEnv(db string, stderr *lockedBuffer, args ...string) (int, string) {
	var stdout lockedBuffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: stderr, getenv: func(k string) string {
		if k == "STEPWISE_DB" {
			return db
		}
		return ""
	}}
	code := e.main(args)
	return code, stdout.String()
}

// chatChunk is an OpenAI chat-completion chunk carrying text.
func chatChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// TestStreamedReplyShowsBeforeTheCallReturns: the fake server sends the
// first line of the reply, then holds the rest of its stream until that
// line is on stderr; the call cannot return before the rest is sent, so
// the line is shown while the call is in flight. The answer goes to
// stdout; stderr has the call, the streamed lines, then the model line.
func TestStreamedReplyShowsBeforeTheCallReturns(t *testing.T) {
	var stderr lockedBuffer
	shownInFlight := make(chan bool, 1)
	srv := modeltest.New(t, modeltest.Reply{
		Events: modeltest.Data(
			chatChunk(`{"role":"assistant","content":""}`, ""),
			chatChunk(`{"content":"The capital of France\n"}`, ""),
			chatChunk(`{"content":"is Paris."}`, ""),
			chatChunk(`{}`, "stop"),
			"[DONE]",
		),
		Before: func(i int) {
			if i != 2 {
				return
			}
			// Wait for the first line to be shown (a bound, not a timing:
			// without streaming it never is, and the test fails below).
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if strings.Contains(stderr.String(), "reply       The capital of France") {
					shownInFlight <- true
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			shownInFlight <- false
		},
	})
	dir := t.TempDir()
	agentFile := filepath.Join(dir, "agent.toml")
	os.WriteFile(agentFile, []byte(fmt.Sprintf("name = \"streamer\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"%s/v1\"\n", srv.URL)), 0o644)
	db := filepath.Join(dir, "s.db")

	code, stdout := inProcessEnv(db, &stderr, "run", agentFile, "Capital of France?")
	if code != exitCompleted {
		t.Fatalf("exit %d\nstderr: %s", code, stderr.String())
	}
	if !<-shownInFlight {
		t.Fatalf("the first line of the reply was not on stderr while the call was in flight:\n%s", stderr.String())
	}
	if stdout != "The capital of France\nis Paris.\n" {
		t.Errorf("stdout = %q, want the answer alone", stdout)
	}
	assertInOrder(t, stderr.String(),
		"#1   calling     primary model (1 message)\n",
		"#1   reply       The capital of France\n",
		"#1   reply       is Paris.\n",
		"#1   model       primary model: 31 chars of text",
		"#2   complete    The capital of France")

	// --quiet: nothing on stderr, the answer still on stdout.
	srv.Push(modeltest.Reply{Events: modeltest.Data(chatChunk(`{"content":"Paris."}`, "stop"), "[DONE]")})
	var quiet lockedBuffer
	code, stdout = inProcessEnv(db, &quiet, "run", "--quiet", agentFile, "Capital?")
	if code != exitCompleted || stdout != "Paris.\n" || quiet.String() != "" {
		t.Errorf("--quiet: exit %d, stdout %q, stderr %q", code, stdout, quiet.String())
	}
}

func assertInOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if i < 0 {
			t.Fatalf("%q is missing, or out of order, in:\n%s", p, s)
		}
		at += i + len(p)
	}
}

// A scripted conversation per provider: a tool call, then the answer, in
// the provider's streamed and whole forms.
type conversation struct {
	provider string
	base     func(url string) string
	streamed [2]modeltest.Reply
	whole    [2]modeltest.Reply
}

func conversations() []conversation {
	chatWhole := func(msg, finish string) modeltest.Reply {
		return modeltest.Reply{Body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + msg +
			`,"finish_reason":"` + finish + `"}],"usage":{"prompt_tokens":30,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":12}}}`}
	}
	chatUsage := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":12}}}`

	respItem := map[string]string{
		"reasoning": `{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAA-enc"}`,
		"call":      `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"echo_city"}`,
		"text":      `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"Paris it is."}]}`,
	}
	response := func(items ...string) string {
		return `{"id":"resp_1","object":"response","created_at":1,"status":"completed","error":null,"incomplete_details":null,"model":"o4-mini","output":[` +
			strings.Join(items, ",") + `],"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":12},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":37}}`
	}
	respStream := func(deltaType, delta string, items ...string) modeltest.Reply {
		return modeltest.Reply{Events: modeltest.Named(
			"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`,
			deltaType, `{"type":"`+deltaType+`","sequence_number":1,"output_index":1,"item_id":"x","delta":`+delta+`}`,
			"response.completed", `{"type":"response.completed","sequence_number":2,"response":`+response(items...)+`}`)}
	}

	antMessage := func(stop string, blocks ...string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[` + strings.Join(blocks, ",") +
			`],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":12,"cache_creation_input_tokens":8,"output_tokens":7}}`
	}
	antStart := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":12,"cache_creation_input_tokens":8,"output_tokens":1}}}`
	antEnd := func(stop string) []string {
		return []string{
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":{"output_tokens":7}}`,
			"message_stop", `{"type":"message_stop"}`,
		}
	}

	return []conversation{
		{
			provider: "openai", base: func(u string) string { return u + "/v1" },
			streamed: [2]modeltest.Reply{
				{Events: modeltest.Data(
					chatChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"echo_city","arguments":""}}]}`, ""),
					chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
					chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""),
					chatChunk(`{}`, "tool_calls"), chatUsage, "[DONE]")},
				{Events: modeltest.Data(chatChunk(`{"content":"Paris "}`, ""), chatChunk(`{"content":"it is."}`, ""), chatChunk(`{}`, "stop"), chatUsage, "[DONE]")},
			},
			whole: [2]modeltest.Reply{
				chatWhole(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"echo_city","arguments":"{\"city\":\"Paris\"}"}}]}`, "tool_calls"),
				chatWhole(`{"role":"assistant","content":"Paris it is."}`, "stop"),
			},
		},
		{
			provider: "openai-responses", base: func(u string) string { return u + "/v1" },
			streamed: [2]modeltest.Reply{
				respStream("response.function_call_arguments.delta", `"{\"city\":\"Paris\"}"`, respItem["reasoning"], respItem["call"]),
				respStream("response.output_text.delta", `"Paris it is."`, respItem["text"]),
			},
			whole: [2]modeltest.Reply{
				{Body: response(respItem["reasoning"], respItem["call"])},
				{Body: response(respItem["text"])},
			},
		},
		{
			provider: "anthropic", base: func(u string) string { return u },
			streamed: [2]modeltest.Reply{
				{Events: modeltest.Named(append([]string{
					"message_start", antStart,
					"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
					"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Use the tool."}}`,
					"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
					"content_block_stop", `{"type":"content_block_stop","index":0}`,
					"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"echo_city","input":{}}}`,
					"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`,
					"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
					"content_block_stop", `{"type":"content_block_stop","index":1}`,
				}, antEnd("tool_use")...)...)},
				{Events: modeltest.Named(append([]string{
					"message_start", antStart,
					"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
					"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris "}}`,
					"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"it is."}}`,
					"content_block_stop", `{"type":"content_block_stop","index":0}`,
				}, antEnd("end_turn")...)...)},
			},
			whole: [2]modeltest.Reply{
				{Body: antMessage("tool_use", `{"type":"thinking","thinking":"Use the tool.","signature":"c2ln"}`, `{"type":"tool_use","id":"toolu_1","name":"echo_city","input":{"city":"Paris"}}`)},
				{Body: antMessage("end_turn", `{"type":"text","text":"Paris it is."}`)},
			},
		},
	}
}

// volatile matches what differs between two runs of one conversation:
// the run id and the times.
var volatile = regexp.MustCompile(`"(id|created|updated|started|completed)":"[^"]*"`)

// TestStreamedAndUnstreamedRunsStoreTheSameBytes: for each provider, one
// scripted conversation run three ways (streamed; a server that answers
// the streamed request whole; stream = false) exports the same steps, byte
// for byte: the checkpoint holds the assembled reply only. The first two
// share their agent file, so their whole exports are identical but for
// the run's id and times.
func TestStreamedAndUnstreamedRunsStoreTheSameBytes(t *testing.T) {
	for _, c := range conversations() {
		t.Run(c.provider, func(t *testing.T) {
			srv := modeltest.New(t)
			dir := t.TempDir()
			db := filepath.Join(dir, "runs.db")
			write := func(name, extra string) string {
				path := filepath.Join(dir, name)
				os.WriteFile(path, []byte(fmt.Sprintf(`name = "streams"
format = "native"
[models.primary]
provider = %q
model = "m"
base_url = %q
%s
[[tools]]
name = "echo_city"
command = ["echo", "{{city}}"]
idempotent = true
parameters = '''{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'''
`, c.provider, c.base(srv.URL), extra)), 0o644)
				return path
			}
			streaming, unstreamed := write("a.toml", ""), write("b.toml", "stream = false")
			var exports []string
			for _, v := range []struct {
				agent   string
				replies [2]modeltest.Reply
			}{{streaming, c.streamed}, {streaming, c.whole}, {unstreamed, c.whole}} {
				srv.Push(v.replies[0], v.replies[1])
				var stderr lockedBuffer
				code, stdout := inProcessEnv(db, &stderr, "run", "--json", v.agent, "Which city?")
				var o outcome
				if err := json.Unmarshal([]byte(stdout), &o); err != nil || code != exitCompleted || o.Answer != "Paris it is." {
					t.Fatalf("exit %d, %s\nstderr: %s", code, stdout, stderr.String())
				}
				code, export := inProcessEnv(db, &stderr, "export", o.RunID)
				if code != 0 {
					t.Fatalf("export: exit %d: %s", code, stderr.String())
				}
				exports = append(exports, volatile.ReplaceAllString(export, `"$1":"-"`))
			}
			if exports[0] != exports[1] {
				t.Errorf("streamed and whole replies stored differently:\n%s\n---\n%s", exports[0], exports[1])
			}
			steps := func(export string) string { return export[strings.Index(export, `"steps":[`):] }
			if steps(exports[0]) != steps(exports[2]) {
				t.Errorf("streamed and unstreamed (stream = false) runs stored different steps:\n%s\n---\n%s", steps(exports[0]), steps(exports[2]))
			}
			if c.provider != "openai" && !strings.Contains(exports[0], "opaque(") {
				t.Errorf("no opaque data kept for %s:\n%s", c.provider, exports[0])
			}
			reqs := srv.Requests()
			for i := range 4 {
				if !strings.Contains(string(reqs[i].Body), `"stream":true`) || strings.Contains(string(reqs[4+i%2].Body), `"stream":true`) {
					t.Errorf("request %d streamed %v, request %d streamed %v", i, !strings.Contains(string(reqs[i].Body), `"stream":true`), 4+i%2, strings.Contains(string(reqs[4+i%2].Body), `"stream":true`))
				}
			}
		})
	}
}
