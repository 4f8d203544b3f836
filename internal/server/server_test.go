package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// agentsDir writes the test agents: "shopper" pauses for an external
// approval, then answers; "quick" answers at once (and fails a second
// turn: its script has one reply); "slow" runs a command tool that
// sleeps; "chat" converses: "answer 1", then a tool call and "answer 2",
// then "answer 3" and on (model calls are numbered across the whole
// conversation; its messages are at most 4096 bytes, a history 100000); "talker" naps first, then replies "reply N" to model
// call N; "broken" does not load.
func agentsDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shopper.jsonl", `{"text": "Asking.", "tool_calls": [{"id": "call_approve", "name": "approve", "arguments": {"item": "lamp"}}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}
{"text": "Bought the lamp.", "usage": {"prompt_tokens": 20, "completion_tokens": 4}}
`)
	write("shopper.toml", `name = "shopper"
[models.primary]
provider = "script"
script = "shopper.jsonl"
[[tools]]
name = "approve"
mode = "external"
parameters = '{"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}'
`)
	write("manager.jsonl", `{"tool_calls": [{"id": "call_research", "name": "research", "arguments": {"task": "brass or steel?"}}]}
{"text": "We buy the brass lamp."}
`)
	write("manager.toml", `name = "manager"
[models.primary]
provider = "script"
script = "manager.jsonl"
[[agents]]
name = "research"
file = "researcher.toml"
`)
	write("researcher.jsonl", `{"tool_calls": [{"id": "call_ask", "name": "ask_person", "arguments": {"q": "brass or steel?"}}]}
{"text": "Brass."}
`)
	write("researcher.toml", `name = "researcher"
[models.primary]
provider = "script"
script = "researcher.jsonl"
[[tools]]
name = "ask_person"
mode = "external"
`)
	write("quick.jsonl", `{"text": "hello"}`+"\n")
	write("quick.toml", `name = "quick"
[models.primary]
provider = "script"
script = "quick.jsonl"
`)
	write("slow.jsonl", `{"tool_calls": [{"id": "n1", "name": "nap", "arguments": {}}]}
{"text": "rested"}
`)
	write("slow.toml", `name = "slow"
[models.primary]
provider = "script"
script = "slow.jsonl"
[[tools]]
name = "nap"
command = ["sleep", "0.4"]
idempotent = true
`)
	write("chat.jsonl", `{"text": "answer 1"}
{"tool_calls": [{"id": "n1", "name": "note", "arguments": {}}]}
{"text": "answer 2"}
{"text": "answer 3"}
{"text": "answer 4"}
{"text": "answer 5"}
`)
	write("chat.toml", `name = "chat"
format = "native"
[models.primary]
provider = "script"
script = "chat.jsonl"
[limits]
max_state_bytes = 400000
[conversation]
max_message_bytes = 4096
[[tools]]
name = "note"
command = ["printf", "noted"]
idempotent = true
`)
	talk := `{"tool_calls": [{"id": "n1", "name": "nap", "arguments": {}}]}` + "\n"
	for i := 2; i <= 20; i++ {
		talk += fmt.Sprintf(`{"text": "reply %d"}`, i) + "\n"
	}
	write("talker.jsonl", talk)
	write("talker.toml", `name = "talker"
format = "native"
[models.primary]
provider = "script"
script = "talker.jsonl"
[[tools]]
name = "nap"
command = ["sleep", "0.4"]
idempotent = true
`)
	write("broken.toml", "name = \n")
	return dir
}

type fixture struct {
	t   testing.TB
	srv *Server
	url string
	db  string
}

// newFixture serves a server over a real SQLite file on a real listener.
func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	if cfg.AgentsDir == "" {
		cfg.AgentsDir = agentsDir(t)
	}
	path := ""
	if cfg.Store == nil {
		path = filepath.Join(t.TempDir(), "serve.db")
		cfg.Store = openSQLiteAt(t, path)
	}
	st := cfg.Store
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Shutdown()
		st.Close()
	})
	return &fixture{t: t, srv: s, url: hs.URL, db: path}
}

// openSQLite opens a store on a new SQLite file.
func openSQLite(t testing.TB) *sqlite.SQLite {
	t.Helper()
	st := openSQLiteAt(t, filepath.Join(t.TempDir(), "serve.db"))
	t.Cleanup(func() { st.Close() })
	return st
}

func openSQLiteAt(t testing.TB, path string) *sqlite.SQLite {
	t.Helper()
	st, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

type reply struct {
	status int
	body   []byte
	header http.Header
}

func (f *fixture) do(method, path string, body any, header ...string) reply {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, f.url+path, rd)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // a header below may replace it
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, b, resp.Header}
}

func (r reply) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%d %s: %v", r.status, r.body, err)
	}
}

func (r reply) code(t testing.TB) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	r.json(t, &e)
	return e.Error.Code
}

func want(t *testing.T, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

// TestExternalToolRoundTrip: a run pauses for an external call; its id is
// in the run; results with an unknown, duplicate or missing id are refused
// and change nothing; the right ones let a worker finish the run; the same
// results again lost the race.
func TestExternalToolRoundTrip(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp", "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	if run.Status != "awaiting_tool_results" || len(run.Pending) != 1 || run.Pending[0].ID != "call_approve" ||
		string(run.Pending[0].Arguments) != `{"item":"lamp"}` || run.Usage == nil || run.Usage.PromptTokens != 10 {
		t.Fatalf("paused run: %s", r.body)
	}
	id := run.ID
	before := f.do("GET", "/v1/runs/"+id+"/steps", nil)
	for name, body := range map[string]string{
		"unknown id": `[{"tool_call_id": "nope", "result": "x"}]`,
		"duplicate":  `[{"tool_call_id": "call_approve", "result": "x"}, {"tool_call_id": "call_approve", "result": "y"}]`,
		"missing":    `[]`,
		"no answer":  `[{"tool_call_id": "call_approve"}]`,
		"not json":   `{`,
	} {
		r := f.do("POST", "/v1/runs/"+id+"/results", body)
		if r.status != http.StatusBadRequest || r.code(t) != codeInvalidResults {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if after := f.do("GET", "/v1/runs/"+id+"/steps", nil); !bytes.Equal(before.body, after.body) {
		t.Fatal("refused results changed the run")
	}
	r = f.do("POST", "/v1/runs/"+id+"/results", `[{"tool_call_id": "call_approve", "result": "approved"}]`)
	want(t, r, http.StatusOK)
	run = f.waitFor(id, "completed")
	if run.Answer != "Bought the lamp." || run.Usage.CompletionTokens != 7 {
		t.Fatalf("completed run: %+v", run)
	}
	r = f.do("POST", "/v1/runs/"+id+"/results", `[{"tool_call_id": "call_approve", "result": "approved"}]`)
	if r.status != http.StatusConflict || r.code(t) != codeAlreadyAnswered {
		t.Fatalf("the same results again: %d %s", r.status, r.body)
	}
}

// waitFor polls the run until it has the status.
func (f *fixture) waitFor(id, status string) apiRun {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var run apiRun
		f.do("GET", "/v1/runs/"+id, nil).json(f.t, &run)
		if run.Status == status {
			return run
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s is %s, not %s", id, run.Status, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sse reads a run's event stream until end (or n step events), and returns
// the step events' ids and the kinds of events.
func (f *fixture) sse(id, lastEventID string, n int) (ids []string, kinds []string) {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.url+"/v1/runs/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		f.t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event, eid string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			eid = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			if !json.Valid([]byte(strings.TrimPrefix(line, "data: "))) {
				f.t.Fatalf("event data is not JSON: %s", line)
			}
		case line == "":
			if event == "" {
				continue
			}
			kinds = append(kinds, event)
			if event == "step" {
				ids = append(ids, eid)
				if n > 0 && len(ids) == n {
					return
				}
			}
			if event == "end" {
				return
			}
			event, eid = "", ""
		}
	}
	return
}

// TestEventsResumeWithoutLossOrRepeat: a run's steps (its start, step 0,
// included) come once each, in order, ids their seqs; a client that reconnects with Last-Event-ID gets
// the rest and nothing twice; the stream ends when the run ended.
func TestEventsResumeWithoutLossOrRepeat(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "slow", "input": "rest"}).json(t, &run)
	first, _ := f.sse(run.ID, "", 2)
	rest, kinds := f.sse(run.ID, first[len(first)-1], 0)
	all := append(first, rest...)
	if strings.Join(all, ",") != "0,1,2,3,4" || kinds[len(kinds)-1] != "end" || !slices.Contains(kinds, "run") {
		t.Fatalf("steps %v, events %v", all, kinds)
	}
	again, _ := f.sse(run.ID, "", 0)
	if strings.Join(again, ",") != "0,1,2,3,4" {
		t.Fatalf("the whole stream again: %v", again)
	}
	if tail, _ := f.sse(run.ID, "4", 0); len(tail) != 0 {
		t.Fatalf("after the last step: %v", tail)
	}
	// The long-poll form.
	var poll struct {
		Steps []apiStep
		Run   apiRun
	}
	f.do("GET", "/v1/runs/"+run.ID+"/events?after=2&wait=1s", nil).json(t, &poll)
	if len(poll.Steps) != 2 || poll.Steps[0].Seq != 3 || poll.Run.Status != "completed" {
		t.Fatalf("long poll: %+v", poll)
	}
	var steps struct{ Steps []apiStep }
	f.do("GET", "/v1/runs/"+run.ID+"/steps?from=2", nil).json(t, &steps)
	if len(steps.Steps) != 3 || steps.Steps[0].Seq != 2 || steps.Steps[0].Action.Kind != "tools" || steps.Steps[1].Result.Kind != "tool_results" {
		t.Fatalf("steps from 2: %+v", steps.Steps)
	}
}

// TestListForkReplayCancelResume covers the rest of the API.
func TestListForkReplayCancelResume(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	var ids []string
	for range 5 {
		var run apiRun
		f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi", "options": map[string]string{"wait": "5s"}}).json(t, &run)
		if run.Status != "completed" || run.Answer != "hello" {
			t.Fatalf("quick run: %+v", run)
		}
		ids = append(ids, run.ID)
	}
	var paused apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &paused)
	type listPage struct {
		Runs []apiRun
		Next string `json:"next_cursor"`
	}
	var page listPage
	var seen []string
	cursor := ""
	for {
		page = listPage{}
		f.do("GET", "/v1/runs?agent=quick&limit=2&cursor="+cursor, nil).json(t, &page)
		for _, r := range page.Runs {
			seen = append(seen, r.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	slices.Reverse(ids)
	if strings.Join(seen, ",") != strings.Join(ids, ",") {
		t.Fatalf("paged %v, want %v", seen, ids)
	}
	f.do("GET", "/v1/runs?status=awaiting_tool_results", nil).json(t, &page)
	if len(page.Runs) != 1 || page.Runs[0].ID != paused.ID {
		t.Fatalf("filter by status: %+v", page.Runs)
	}
	for _, q := range []string{"status=weird", "limit=0", "limit=9999", "cursor=bogus"} {
		if r := f.do("GET", "/v1/runs?"+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d", q, r.status)
		}
	}
	// Fork the paused run at its pause with a refusal: it completes.
	r := f.do("POST", "/v1/runs/"+paused.ID+"/fork", map[string]any{"at": paused.Steps, "result": []map[string]string{{"tool_call_id": "call_approve", "error": "refused"}}})
	want(t, r, http.StatusCreated)
	var fork apiRun
	r.json(t, &fork)
	if fork.Parent == nil || fork.Parent.ID != paused.ID {
		t.Fatalf("fork: %s", r.body)
	}
	f.waitFor(fork.ID, "completed")
	var rep struct {
		Identical bool
		Steps     int
	}
	f.do("POST", "/v1/runs/"+ids[0]+"/replay", nil).json(t, &rep)
	if !rep.Identical || rep.Steps == 0 {
		t.Fatalf("replay: %+v", rep)
	}
	// Cancel the paused run; cancelling again is refused.
	r = f.do("POST", "/v1/runs/"+paused.ID+"/cancel", map[string]string{"reason": "changed my mind"})
	want(t, r, http.StatusOK)
	var cancelled apiRun
	r.json(t, &cancelled)
	if cancelled.Status != "cancelled" || cancelled.Failure == nil || !strings.Contains(cancelled.Failure.Reason, "changed my mind") {
		t.Fatalf("cancelled: %s", r.body)
	}
	if r := f.do("POST", "/v1/runs/"+paused.ID+"/cancel", nil); r.status != http.StatusConflict || r.code(t) != codeEnded {
		t.Fatalf("cancel again: %d %s", r.status, r.body)
	}
	// Resume a completed run: nothing to do, reported as it is.
	if r := f.do("POST", "/v1/runs/"+ids[0]+"/resume", nil); r.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v1/runs/nope", "/v1/runs/nope/steps", "/v1/runs/nope/events"} {
		if r := f.do("GET", p, nil); r.status != http.StatusNotFound || r.code(t) != codeNotFound {
			t.Errorf("%s: %d %s", p, r.status, r.body)
		}
	}
	if r := f.do("DELETE", "/v1/runs", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /v1/runs: %d", r.status)
	}
}
