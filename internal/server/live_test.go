package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/internal/modeltest"
)

// sseEvent is one event of a stream.
type sseEvent struct{ id, kind, data string }

// openStream connects to a run's event stream; next reads its events one
// at a time.
func (f *fixture) openStream(id, lastEventID string) (next func() (sseEvent, bool), close func()) {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.url+"/v1/runs/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// A bound, so that a broken stream fails the test instead of hanging it.
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return func() (sseEvent, bool) {
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.kind != "":
				return ev, true
			}
		}
		return ev, false
	}, func() { resp.Body.Close() }
}

// TestEventsCarryTheReplyAsItStreams: while the model streams, the run's
// event stream carries "delta" events with ids "SEQ.N" after the step
// that asked for the call; a client that drops off and reconnects with
// the last delta's id gets the live events from then on and the steps it
// has not seen, none twice; the step after the call holds the whole
// reply.
func TestEventsCarryTheReplyAsItStreams(t *testing.T) {
	release, connected := make(chan struct{}), make(chan struct{})
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	model := modeltest.New(t, modeltest.Reply{
		Events: modeltest.Data(
			chunk(`{"role":"assistant","content":""}`, ""),
			chunk(`{"content":"Hello"}`, ""),
			chunk(`{"content":" from"}`, ""),
			chunk(`{"content":" the stream."}`, ""),
			chunk(`{}`, "stop"),
			"[DONE]",
		),
		Before: func(i int) {
			switch i {
			case 1:
				<-connected // the reply waits for the first client
			case 3:
				<-release // the rest waits for the second client
			}
		},
	})
	// Registered after the model server's, so it runs first: a test that
	// fails early does not leave the server's handler waiting.
	t.Cleanup(func() { openOnce(connected); openOnce(release) })
	dir := agentsDir(t)
	os.WriteFile(filepath.Join(dir, "streamer.toml"), []byte(fmt.Sprintf("name = \"streamer\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"%s/v1\"\n", model.URL)), 0o644)
	f := newFixture(t, Config{Workers: 1, AgentsDir: dir})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "streamer", "input": "hi"}).json(t, &run)

	// The first client: the steps up to the call's request, then the
	// call's live events as they come.
	next, closeFirst := f.openStream(run.ID, "")
	var first []sseEvent
	for {
		ev, ok := next()
		if !ok {
			t.Fatalf("the stream ended: %v", first)
		}
		first = append(first, ev)
		if len(first) == 1 {
			openOnce(connected) // subscribed before its first event was written
		}
		if _, deltas := split(first); len(deltas) == 2 {
			break
		}
	}
	closeFirst()
	steps, deltas := split(first)
	if strings.Join(steps, ",") != "0,1" || strings.Join(deltas, ",") != "1.1,1.2" {
		t.Fatalf("first client: steps %v, deltas %v (%v)", steps, deltas, first)
	}
	if ev := first[len(first)-1]; ev.data != `{"seq":1,"n":2,"part":"text","text":" from"}` {
		t.Errorf("delta data %s", ev.data)
	}
	if kinds := kindsOf(first); kinds != "step step calling delta delta " {
		t.Errorf("first client's events: %s", kinds)
	}

	// The second client reconnects where the first stopped.
	next, closeSecond := f.openStream(run.ID, "1.2")
	defer closeSecond()
	var second []sseEvent
	for {
		ev, ok := next()
		if !ok {
			break
		}
		second = append(second, ev)
		if len(second) == 1 {
			openOnce(release) // subscribed: let the model finish
		}
		if ev.kind == "end" {
			break
		}
	}
	steps, deltas = split(second)
	if strings.Join(steps, ",") != "2" || strings.Join(deltas, ",") != "1.3" {
		t.Fatalf("second client: steps %v, deltas %v (%v)", steps, deltas, second)
	}
	// It connected during the call: it is told of the call first.
	if kinds := kindsOf(second); kinds != "calling delta step end " {
		t.Errorf("second client's events: %s", kinds)
	}
	if second[0].kind == "calling" {
		var calling struct {
			Seq     int
			Text    string
			Started time.Time
		}
		err := json.Unmarshal([]byte(second[0].data), &calling)
		created, _ := time.Parse(time.RFC3339Nano, run.Created)
		if err != nil || calling.Seq != 1 || calling.Text != "primary model (1 message)" || calling.Started.Before(created) || time.Since(calling.Started) > time.Minute {
			t.Errorf("calling data %s (run created %s)", second[0].data, run.Created)
		}
	}
	var step apiStep
	for _, ev := range second {
		if ev.kind == "step" {
			json.Unmarshal([]byte(ev.data), &step)
		}
	}
	if step.Result == nil || !strings.Contains(string(mustJSON(step.Result)), "Hello from the stream.") {
		t.Errorf("the step after the call does not hold the whole reply: %s", mustJSON(step))
	}
}

// kindsOf lists the kinds of the events other than "run" (which come
// whenever the run changes), each followed by a space.
func kindsOf(evs []sseEvent) string {
	kinds := ""
	for _, ev := range evs {
		if ev.kind != "run" {
			kinds += ev.kind + " "
		}
	}
	return kinds
}

// openOnce closes ch unless it is closed already.
func openOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// split returns the ids of the step events and of the delta events.
func split(evs []sseEvent) (steps, deltas []string) {
	for _, ev := range evs {
		switch ev.kind {
		case "step":
			steps = append(steps, ev.id)
		case "delta":
			deltas = append(deltas, ev.id)
			if _, _, ok := strings.Cut(ev.id, "."); !ok {
				deltas = append(deltas, "bad id "+strconv.Quote(ev.id))
			}
		}
	}
	return steps, deltas
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestEventsCarryToolOutputAsItComes: a command tool's output lines reach
// a run's event stream as live "progress" events while the tool runs (no
// id: they are not stored), before the step that holds its result.
func TestEventsCarryToolOutputAsItComes(t *testing.T) {
	dir := agentsDir(t)
	os.WriteFile(filepath.Join(dir, "chatty.jsonl"), []byte(`{"tool_calls": [{"id": "c1", "name": "chatty", "arguments": {}}]}
{"text": "done"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "chatty.toml"), []byte(`name = "chatty"
[models.primary]
provider = "script"
script = "chatty.jsonl"
[[tools]]
name = "chatty"
command = ["sh", "-c", "sleep 0.5; echo first line; sleep 0.3; echo second line"]
idempotent = true
`), 0o644)
	f := newFixture(t, Config{Workers: 1, AgentsDir: dir})
	var run apiRun
	f.do("POST", "/v1/runs", map[string]any{"agent": "chatty", "input": "go"}).json(t, &run)
	next, closeStream := f.openStream(run.ID, "")
	defer closeStream()
	var progress []string
	resultStep := -1
	for {
		ev, ok := next()
		if !ok {
			t.Fatal("the stream ended early")
		}
		switch ev.kind {
		case "progress":
			if ev.id != "" {
				t.Errorf("a progress event has an id: %q", ev.id)
			}
			var le struct{ Text string }
			json.Unmarshal([]byte(ev.data), &le)
			progress = append(progress, le.Text)
		case "step":
			if strings.Contains(ev.data, "first line") && resultStep < 0 {
				resultStep = len(progress)
			}
		}
		if ev.kind == "end" {
			break
		}
	}
	if len(progress) != 2 || !strings.Contains(progress[0], "first line") || !strings.Contains(progress[1], "second line") {
		t.Fatalf("progress events %q", progress)
	}
	if resultStep != 2 {
		t.Fatalf("the step with the result came after %d progress events, want after both", resultStep)
	}
}
