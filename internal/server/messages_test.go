package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// waitTurn polls the run until it answered its nth turn: completed, with
// n turns taken.
func (f *fixture) waitTurn(id string, n int) apiRun {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var run apiRun
		f.do("GET", "/v1/runs/"+id, nil).json(f.t, &run)
		if run.Status == "completed" && run.Turns == n {
			return run
		}
		if run.Status == "failed" || run.Status == "cancelled" || time.Now().After(deadline) {
			f.t.Fatalf("run %s is %s after %d turns (%q), waiting for turn %d to be answered", id, run.Status, run.Turns, run.Reason, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// say sends the run a message and wants it taken (202).
func (f *fixture) say(id, content string) apiRun {
	f.t.Helper()
	r := f.do("POST", "/v1/runs/"+id+"/messages", map[string]string{"content": content})
	if r.status != http.StatusAccepted {
		f.t.Fatalf("message %q: %d %s", content, r.status, r.body)
	}
	var run apiRun
	r.json(f.t, &run)
	return run
}

// conversation reads the whole of GET /messages, page by page.
func (f *fixture) conversation(id string, limit int) []apiMessage {
	f.t.Helper()
	var all []apiMessage
	from := 0
	for range 100 {
		var page messageList
		r := f.do("GET", fmt.Sprintf("/v1/runs/%s/messages?from=%d&limit=%d", id, from, limit), nil)
		want(f.t.(*testing.T), r, http.StatusOK)
		r.json(f.t, &page)
		all = append(all, page.Messages...)
		if page.NextFrom == 0 {
			return all
		}
		from = page.NextFrom
	}
	f.t.Fatal("GET /messages pages without end")
	return nil
}

// short is a body cut to a length a test log can show.
func short(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}

// render is a conversation as "role:content" lines ("assistant:calls
// note" for a call, "tool(note):noted" for its result), checking the
// indexes count from 0.
func render(t *testing.T, msgs []apiMessage) string {
	t.Helper()
	var lines []string
	for i, m := range msgs {
		if m.Index != i {
			t.Errorf("message %d has index %d", i, m.Index)
		}
		line := string(m.Role)
		if m.Name != "" {
			line += "(" + m.Name + ")"
		}
		line += ":"
		if m.Content != nil {
			line += *m.Content
		}
		for _, c := range m.ToolCalls {
			line += "calls " + c.Function.Name
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestConversationOverHTTP: a run answers, takes the user's next message
// (202, running again), answers it after a tool call, and a third; turns
// counts the messages; GET /messages is the conversation in the OpenAI
// format; each message is a step of its own whose result is the message,
// and begins a turn (the steps' turn).
func TestConversationOverHTTP(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "input": "hi", "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	if run.Status != "completed" || run.Answer != "answer 1" || run.Turns != 1 {
		t.Fatalf("first turn: %s", r.body)
	}
	id := run.ID
	sent := f.say(id, "and then?")
	if sent.ID != id || (sent.Status != "running" && sent.Status != "completed") || sent.Input != "hi" {
		t.Fatalf("the message's answer: %+v", sent)
	}
	run = f.waitTurn(id, 2)
	if run.Answer != "answer 2" || !slices.Equal(run.ToolsUsed, []string{"note"}) {
		t.Fatalf("second turn: %+v", run)
	}
	f.say(id, "thanks")
	run = f.waitTurn(id, 3)
	if run.Answer != "answer 3" || run.Counters.ModelCalls != 4 {
		t.Fatalf("third turn: %+v", run)
	}
	got := render(t, f.conversation(id, 500))
	want := strings.Join([]string{
		"user:hi", "assistant:answer 1",
		"user:and then?", "assistant:calls note", "tool(note):noted", "assistant:answer 2",
		"user:thanks", "assistant:answer 3",
	}, "\n")
	if got != want {
		t.Fatalf("the conversation:\n%s\nwant\n%s", got, want)
	}
	// The list shows turns too.
	var list runList
	f.do("GET", "/v1/runs?agent=chat", nil).json(t, &list)
	if len(list.Runs) != 1 || list.Runs[0].Turns != 3 {
		t.Fatalf("the list: %+v", list.Runs)
	}
	// Each message is a step whose result is the message, after the step
	// that answered.
	var steps struct{ Steps []apiStep }
	f.do("GET", "/v1/runs/"+id+"/steps", nil).json(t, &steps)
	var messages, turns []string
	for _, s := range steps.Steps {
		turns = append(turns, strconv.Itoa(s.Turn))
	}
	if strings.Join(turns, ",") != "1,1,1,2,2,2,2,3,3" {
		t.Errorf("the steps' turns: %v", turns)
	}
	for i, s := range steps.Steps {
		if s.Result == nil || s.Result.Kind != "user_message" {
			continue
		}
		if prev := steps.Steps[i-1]; prev.Action == nil || prev.Action.Kind != "complete" {
			t.Errorf("step %d folds a message in after %+v", s.Seq, prev.Action)
		}
		b, _ := json.Marshal(s.Result.Data)
		messages = append(messages, string(b))
	}
	if strings.Join(messages, ",") != `{"content":"and then?"},{"content":"thanks"}` {
		t.Fatalf("message steps: %v", messages)
	}
}

// TestMessageRefusals: a message to an unknown run (404), an empty one
// (400), one over the agent's limit or over the server's body limit (413),
// a malformed body (400), one to a run that failed or was cancelled (409
// ended); none stores anything.
func TestMessageRefusals(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "input": "hi", "options": map[string]string{"wait": "5s"}}).json(t, &run)
	if run.Status != "completed" {
		t.Fatalf("chat run: %+v", run)
	}
	path := "/v1/runs/" + run.ID + "/messages"
	before := f.do("GET", "/v1/runs/"+run.ID+"/steps", nil)
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"empty", map[string]string{"content": ""}, http.StatusBadRequest, codeBadRequest},
		{"blank", map[string]string{"content": " \n\t"}, http.StatusBadRequest, codeBadRequest},
		{"no content", `{}`, http.StatusBadRequest, codeBadRequest},
		{"no body", ``, http.StatusBadRequest, codeBadRequest},
		{"not JSON", `{"content": `, http.StatusBadRequest, codeBadRequest},
		{"unknown field", `{"content": "x", "role": "user"}`, http.StatusBadRequest, codeBadRequest},
		{"over the agent's limit", map[string]string{"content": strings.Repeat("x", 4097)}, http.StatusRequestEntityTooLarge, codeTooLarge},
		{"over the body limit", map[string]string{"content": strings.Repeat("x", DefaultMaxBody)}, http.StatusRequestEntityTooLarge, codeTooLarge},
	} {
		r := f.do("POST", path, c.body)
		if r.status != c.status || r.code(t) != c.code {
			t.Errorf("%s: %d %s", c.name, r.status, short(r.body))
		}
	}
	if r := f.do("POST", path, map[string]string{"content": ""}); !strings.Contains(string(r.body), "the message is empty") {
		t.Errorf("empty: %s", r.body)
	}
	if r := f.do("POST", path, map[string]string{"content": strings.Repeat("x", 4097)}); !strings.Contains(string(r.body), "the message is too large") {
		t.Errorf("too large: %s", r.body)
	}
	if after := f.do("GET", "/v1/runs/"+run.ID+"/steps", nil); string(after.body) != string(before.body) {
		t.Fatal("a refused message changed the run")
	}
	if now := runAuthed(t, f, run.ID, nil); now.Status != "completed" || now.Turns != 1 {
		t.Fatalf("after refusals the run is %s with %d turns", now.Status, now.Turns)
	}
	if n, err := f.srv.cfg.Store.Inbox(t.Context(), run.ID); err != nil || len(n) != 0 {
		t.Fatalf("the inbox holds %v (%v)", n, err)
	}
	// The limit is the agent's: 4096 bytes fit.
	f.say(run.ID, strings.Repeat("y", 4096))
	f.waitTurn(run.ID, 2)

	r := f.do("POST", "/v1/runs/nope/messages", map[string]string{"content": "hello?"})
	if r.status != http.StatusNotFound || r.code(t) != codeNotFound {
		t.Errorf("unknown run: %d %s", r.status, r.body)
	}

	// A run that failed: quick has one reply, so its second turn fails.
	var quick apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "quick", "input": "hi", "options": map[string]string{"wait": "5s"}}).json(t, &quick)
	f.say(quick.ID, "more")
	f.waitFor(quick.ID, "failed")
	r = f.do("POST", "/v1/runs/"+quick.ID+"/messages", map[string]string{"content": "still there?"})
	if r.status != http.StatusConflict || r.code(t) != codeEnded || !strings.Contains(string(r.body), "the conversation has ended") {
		t.Errorf("failed run: %d %s", r.status, r.body)
	}

	// A run cancelled while paused.
	var paused apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &paused)
	want(t, f.do("POST", "/v1/runs/"+paused.ID+"/cancel", map[string]string{"reason": "no"}), http.StatusOK)
	r = f.do("POST", "/v1/runs/"+paused.ID+"/messages", map[string]string{"content": "wait"})
	if r.status != http.StatusConflict || r.code(t) != codeEnded {
		t.Errorf("cancelled run: %d %s", r.status, r.body)
	}

	for _, id := range []string{quick.ID, paused.ID, run.ID} {
		if n, err := f.srv.cfg.Store.Inbox(t.Context(), id); err != nil || len(n) != 0 {
			t.Errorf("run %s: the inbox holds %v (%v)", id, n, err)
		}
	}
}

// TestRacingMessages: two clients each send three messages to a run
// while it works (a tool naps), at the same time. Every message is taken
// once, each client's in the order it sent them; each is a step of its
// own, announced by a message event on the stream in the order of the
// steps, which is the order of the conversation.
func TestRacingMessages(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "talker", "input": "start"})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	next, closeStream := f.openStream(run.ID, "")
	defer closeStream()
	// Busy: the nap runs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.do("GET", "/v1/runs/"+run.ID, nil).json(t, &run)
		if run.Steps >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if run.Status != "running" {
		t.Fatalf("the run is not at work: %+v", run)
	}
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 3; i++ {
				content := fmt.Sprintf("%s%d", who, i)
				r := f.do("POST", "/v1/runs/"+run.ID+"/messages", map[string]string{"content": content})
				if r.status != http.StatusAccepted {
					t.Errorf("message %s: %d %s", content, r.status, r.body)
				}
			}
		}()
	}
	wg.Wait()
	run = f.waitTurn(run.ID, 7)

	var users []string
	for _, m := range f.conversation(run.ID, 500) {
		if m.Role == "user" && m.Content != nil {
			users = append(users, *m.Content)
		}
	}
	if users[0] != "start" || len(users) != 7 {
		t.Fatalf("user messages: %v", users)
	}
	sorted := slices.Sorted(slices.Values(users[1:]))
	if strings.Join(sorted, ",") != "a1,a2,a3,b1,b2,b3" {
		t.Fatalf("messages lost or repeated: %v", users)
	}
	for _, who := range []string{"a", "b"} {
		var mine []string
		for _, u := range users[1:] {
			if strings.HasPrefix(u, who) {
				mine = append(mine, u)
			}
		}
		if strings.Join(mine, ",") != who+"1,"+who+"2,"+who+"3" {
			t.Errorf("client %s's messages arrived as %v", who, mine)
		}
	}
	// Every message begins a turn, in order: the steps' turns never go
	// back, and end at the seventh.
	var steps struct{ Steps []apiStep }
	f.do("GET", "/v1/runs/"+run.ID+"/steps", nil).json(t, &steps)
	for i, s := range steps.Steps {
		if i > 0 && s.Turn < steps.Steps[i-1].Turn {
			t.Errorf("step %d is in turn %d, after turn %d", s.Seq, s.Turn, steps.Steps[i-1].Turn)
		}
	}
	if last := steps.Steps[len(steps.Steps)-1]; last.Turn != 7 {
		t.Errorf("the last step is in turn %d, want 7", last.Turn)
	}
	// The stream: each message event comes right before the step that
	// folded it in, in the conversation's order.
	var announced []string
	var pendingSeq = -1
	for {
		ev, ok := next()
		if !ok {
			t.Fatalf("the stream ended early; messages %v", announced)
		}
		if ev.kind == "end" {
			break
		}
		switch ev.kind {
		case "message":
			var m messageEvent
			if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
				t.Fatal(err)
			}
			if ev.id != "" {
				t.Errorf("message event with id %q", ev.id)
			}
			announced = append(announced, m.Content)
			pendingSeq = m.Seq
		case "step":
			var s apiStep
			if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
				t.Fatal(err)
			}
			isMessage := s.Result != nil && s.Result.Kind == "user_message"
			if isMessage != (pendingSeq == s.Seq) {
				t.Errorf("step %d (result %+v) after a message event for step %d", s.Seq, s.Result, pendingSeq)
			}
			pendingSeq = -1
		}
	}
	if strings.Join(announced, ",") != strings.Join(users[1:], ",") {
		t.Errorf("message events %v, the conversation %v", announced, users[1:])
	}
}

// TestMessageEventsOnReplay: a client that connects after the fact, or
// reconnects with Last-Event-ID, gets the message events of the steps it
// has not seen, each before its step; one that follows a completed run
// after sending it a message gets the next turn.
func TestMessageEventsOnReplay(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "input": "hi", "options": map[string]string{"wait": "5s"}}).json(t, &run)
	last := strconv.Itoa(run.Steps)
	f.say(run.ID, "second")
	// Following the run again from its last step: the new turn, then end.
	_, kinds := f.sse(run.ID, last, 0)
	if !slices.Contains(kinds, "message") || kinds[len(kinds)-1] != "end" {
		t.Fatalf("following the second turn: %v", kinds)
	}
	f.waitTurn(run.ID, 2)
	f.say(run.ID, "third")
	run = f.waitTurn(run.ID, 3)

	type seen struct {
		kind, id string
		seq      int
		content  string
	}
	read := func(lastID string) []seen {
		next, closeStream := f.openStream(run.ID, lastID)
		defer closeStream()
		var out []seen
		for {
			ev, ok := next()
			if !ok || ev.kind == "end" {
				return out
			}
			switch ev.kind {
			case "message":
				var m messageEvent
				json.Unmarshal([]byte(ev.data), &m)
				out = append(out, seen{"message", ev.id, m.Seq, m.Content})
			case "step":
				var s apiStep
				json.Unmarshal([]byte(ev.data), &s)
				kind := ""
				if s.Result != nil {
					kind = s.Result.Kind
				}
				out = append(out, seen{"step", ev.id, s.Seq, kind})
			}
		}
	}
	all := read("")
	var msgSeqs []int
	for i, e := range all {
		if e.kind != "message" {
			continue
		}
		if i+1 >= len(all) || all[i+1].kind != "step" || all[i+1].seq != e.seq || all[i+1].content != "user_message" || e.id != "" {
			t.Fatalf("message event %+v is not followed by its step: %+v", e, all)
		}
		msgSeqs = append(msgSeqs, e.seq)
	}
	if len(msgSeqs) != 2 {
		t.Fatalf("message events at %v, want two: %+v", msgSeqs, all)
	}
	// Reconnecting just before the third message's step.
	tail := read(strconv.Itoa(msgSeqs[1] - 1))
	if len(tail) < 2 || tail[0] != (seen{"message", "", msgSeqs[1], "third"}) || tail[1].seq != msgSeqs[1] {
		t.Fatalf("from step %d: %+v", msgSeqs[1]-1, tail)
	}
	// Reconnecting at that step: its message is not sent again.
	for _, e := range read(strconv.Itoa(msgSeqs[1])) {
		if e.kind == "message" {
			t.Fatalf("from step %d the message came again: %+v", msgSeqs[1], e)
		}
	}
}

// TestStartFromHistory: POST /v1/runs with messages (the OpenAI chat
// format) starts the run from that history: it answers the last user
// message, counts the history's user messages as turns, and lists the
// history as its conversation; then the conversation goes on. Input and
// messages both, or neither, is 400 bad_request; a history the run cannot
// start from is 400 invalid_history with the core's words; nothing is
// stored for a refusal.
func TestStartFromHistory(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	history := []map[string]any{
		{"role": "system", "content": "Be brief."},
		{"role": "user", "content": "note this"},
		{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]string{"name": "note", "arguments": "{}"}}}},
		{"role": "tool", "tool_call_id": "c1", "name": "note", "content": "noted"},
		{"role": "assistant", "content": "Noted."},
		{"role": "user", "content": [](map[string]string){{"type": "text", "text": "what did"}, {"type": "text", "text": "you note?"}}},
	}
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "messages": history, "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	if run.Status != "completed" || run.Answer != "answer 1" || run.Turns != 2 || run.Input != "what did\nyou note?" {
		t.Fatalf("run from a history: %s", r.body)
	}
	got := render(t, f.conversation(run.ID, 500))
	want := strings.Join([]string{
		"system:Be brief.", "user:note this", "assistant:calls note", "tool(note):noted", "assistant:Noted.",
		"user:what did\nyou note?", "assistant:answer 1",
	}, "\n")
	if got != want {
		t.Fatalf("the conversation:\n%s\nwant\n%s", got, want)
	}
	f.say(run.ID, "go on")
	if run = f.waitTurn(run.ID, 3); run.Answer != "answer 2" {
		t.Fatalf("the next turn: %+v", run)
	}

	var before runList
	f.do("GET", "/v1/runs", nil).json(t, &before)
	for _, c := range []struct {
		name   string
		body   string
		status int
		code   string
		words  string
	}{
		{"both", `{"agent": "chat", "input": "hi", "messages": [{"role": "user", "content": "hi"}]}`, 400, codeBadRequest, "not both"},
		{"neither", `{"agent": "chat"}`, 400, codeBadRequest, "input or messages is required"},
		{"null messages", `{"agent": "chat", "messages": null}`, 400, codeBadRequest, "input or messages is required"},
		{"empty history", `{"agent": "chat", "messages": []}`, 400, codeInvalidHistory, "bad message history"},
		{"not an array", `{"agent": "chat", "messages": {"role": "user"}}`, 400, codeInvalidHistory, "bad message history"},
		{"unknown role", `{"agent": "chat", "messages": [{"role": "robot", "content": "hi"}]}`, 400, codeInvalidHistory, "bad message history"},
		{"ends with the assistant", `{"agent": "chat", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}`, 400, codeInvalidHistory, "bad message history"},
		{"a result without its call", `{"agent": "chat", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]}`, 400, codeInvalidHistory, "bad message history"},
		{"a field it cannot read", `{"agent": "chat", "messages": [{"role": "user", "content": "hi", "audio": {}}]}`, 400, codeInvalidHistory, "message 1"},
		{"an image part", `{"agent": "chat", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, 400, codeInvalidHistory, "only text parts"},
		{"over the agent's input limit", `{"agent": "chat", "messages": [{"role": "user", "content": "` + strings.Repeat("x", 100001) + `"}]}`, 413, codeTooLarge, "over the limit"},
	} {
		r := f.do("POST", "/v1/runs", c.body)
		if r.status != c.status || r.code(t) != c.code || !strings.Contains(string(r.body), c.words) {
			t.Errorf("%s: %d %s", c.name, r.status, short(r.body))
		}
	}
	var after runList
	f.do("GET", "/v1/runs", nil).json(t, &after)
	if len(after.Runs) != len(before.Runs) {
		t.Fatalf("refused histories stored runs: %d, then %d", len(before.Runs), len(after.Runs))
	}
}

// TestMessagesPaging: GET /messages pages with from and limit, as GET
// /steps does; next_from is the next page's from, absent on the last;
// each message carries its index.
func TestMessagesPaging(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "input": "one", "options": map[string]string{"wait": "5s"}}).json(t, &run)
	f.say(run.ID, "two")
	f.waitTurn(run.ID, 2)
	whole := f.conversation(run.ID, 5000)
	if len(whole) != 6 {
		t.Fatalf("the conversation: %s", render(t, whole))
	}
	for _, limit := range []int{1, 2, 4, 6} {
		if paged := f.conversation(run.ID, limit); render(t, paged) != render(t, whole) {
			t.Errorf("pages of %d: %s", limit, render(t, paged))
		}
	}
	var page messageList
	f.do("GET", "/v1/runs/"+run.ID+"/messages?from=2&limit=3", nil).json(t, &page)
	if len(page.Messages) != 3 || page.Messages[0].Index != 2 || page.NextFrom != 5 || *page.Messages[0].Content != "two" {
		t.Fatalf("from 2, limit 3: %+v", page)
	}
	r := f.do("GET", "/v1/runs/"+run.ID+"/messages?from=6", nil)
	want(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.body)) != `{"messages":[]}` {
		t.Fatalf("past the end: %s", r.body)
	}
	for _, q := range []string{"from=-1", "from=x", "limit=0", "limit=5001", "limit=x"} {
		if r := f.do("GET", "/v1/runs/"+run.ID+"/messages?"+q, nil); r.status != http.StatusBadRequest || r.code(t) != codeBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	if r := f.do("GET", "/v1/runs/nope/messages", nil); r.status != http.StatusNotFound || r.code(t) != codeNotFound {
		t.Errorf("unknown run: %d %s", r.status, r.body)
	}
}

// TestMessageIdempotencyKey: a message sent again with the same
// Idempotency-Key gets the first outcome back and is not posted twice;
// the same key with another message is refused.
func TestMessageIdempotencyKey(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "input": "one", "options": map[string]string{"wait": "5s"}}).json(t, &run)
	path := "/v1/runs/" + run.ID + "/messages"
	first := f.do("POST", path, `{"content": "two"}`, "Idempotency-Key", "msg-1")
	want(t, first, http.StatusAccepted)
	f.waitTurn(run.ID, 2)
	again := f.do("POST", path, `{"content": "two"}`, "Idempotency-Key", "msg-1")
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("the retry: %d %v %s", again.status, again.header, again.body)
	}
	if r := f.do("POST", path, `{"content": "three"}`, "Idempotency-Key", "msg-1"); r.status != http.StatusUnprocessableEntity || r.code(t) != codeIdempotencyMismatch {
		t.Fatalf("another message under the key: %d %s", r.status, r.body)
	}
	time.Sleep(100 * time.Millisecond) // a second post would have made it running
	if run := f.waitTurn(run.ID, 2); run.Answer != "answer 2" {
		t.Fatalf("after the retry: %+v", run)
	}
	// A refusal is kept too: the same empty message is refused again.
	want(t, f.do("POST", path, `{"content": ""}`, "Idempotency-Key", "msg-2"), http.StatusBadRequest)
	if r := f.do("POST", path, `{"content": ""}`, "Idempotency-Key", "msg-2"); r.status != http.StatusBadRequest || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the refusal again: %d %v", r.status, r.header)
	}
}

// TestConversationLeavesSummariesOut: GET /messages of a run whose history
// was compacted (the recorded one) lists the conversation without the
// compaction's summaries (role "summary" is no chat role), each message
// still at its index in the log; the listing, with a next user message,
// starts another run.
func TestConversationLeavesSummariesOut(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	file, err := os.Open("../../testdata/runs/compaction.json")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	id, err := f.srv.cfg.Store.Import(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := f.srv.cfg.Store.LoadLatest(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	summaries := 0
	for _, m := range rec.State.Messages {
		if m.Role == core.RoleSummary {
			summaries++
		}
	}
	if summaries == 0 {
		t.Fatal("the recorded run holds no summary")
	}
	msgs := f.conversation(id, 5)
	if len(msgs) != len(rec.State.Messages)-summaries {
		t.Fatalf("%d messages listed, the log holds %d with %d summaries", len(msgs), len(rec.State.Messages), summaries)
	}
	var history []shell.ChatMessage
	for i, m := range msgs {
		if m.Role == core.RoleSummary || rec.State.Messages[m.Index].Role != m.Role || i > 0 && m.Index <= msgs[i-1].Index {
			t.Fatalf("message %d: %s at index %d", i, m.Role, m.Index)
		}
		history = append(history, m.ChatMessage)
	}
	next := "and then?"
	history = append(history, shell.ChatMessage{Role: core.RoleUser, Content: &next})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "chat", "messages": history})
	want(t, r, http.StatusCreated)
}
