package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestEventNCarriesStepN: the stream's step event with id N carries step N
// exactly as GET /v1/runs/{id}/steps lists it: the result step N folded in
// (the answer to step N-1's request) and the action step N decided; the
// answer to step N's request comes with event N+1. A run's steps and
// counters.steps are its last seq; counters.requests is the core's count
// of requests (core's doc, "Steps").
func TestEventNCarriesStepN(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp", "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	want(t, f.do("POST", "/v1/runs/"+run.ID+"/results", `[{"tool_call_id": "call_approve", "result": "approved"}]`), http.StatusOK)
	run = f.waitFor(run.ID, "completed")

	next, closeStream := f.openStream(run.ID, "")
	defer closeStream()
	events := map[int]any{}
	var order []int
	for {
		ev, ok := next()
		if !ok {
			t.Fatalf("the stream ended before its end event; steps %v", order)
		}
		if ev.kind == "end" {
			break
		}
		if ev.kind != "step" {
			continue
		}
		n, err := strconv.Atoi(ev.id)
		if err != nil {
			t.Fatalf("step event id %q", ev.id)
		}
		var data any
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
			t.Fatal(err)
		}
		events[n] = data
		order = append(order, n)
	}

	var listed struct {
		Steps []json.RawMessage `json:"steps"`
	}
	f.do("GET", "/v1/runs/"+run.ID+"/steps", nil).json(t, &listed)
	// Start, ask the model, pause for approve, ask the model, complete.
	if len(listed.Steps) != 5 || len(order) != 5 {
		t.Fatalf("/steps lists %d steps, the stream sent %v", len(listed.Steps), order)
	}
	steps := make([]apiStep, len(listed.Steps))
	for n, raw := range listed.Steps {
		var want any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if order[n] != n || !reflect.DeepEqual(events[n], want) {
			t.Errorf("event %d carries\n  %v\n/steps lists step %d as\n  %v", order[n], events[order[n]], n, want)
		}
		if err := json.Unmarshal(raw, &steps[n]); err != nil {
			t.Fatal(err)
		}
		if s := steps[n]; s.Seq != n || s.Counters.Steps != n {
			t.Errorf("step %d: seq %d, counters.steps %d", n, s.Seq, s.Counters.Steps)
		}
	}
	// Step 2 folds in the reply to step 1's model request and pauses for
	// the call it asked for; step 3 folds in the answer to that pause.
	s1, s2, s3 := steps[1], steps[2], steps[3]
	if s1.Result != nil || s1.Action == nil || s1.Action.Kind != "model" ||
		s2.Result == nil || s2.Result.Kind != "reply" || s2.Action == nil || s2.Action.Kind != "external" || len(s2.Action.Calls) != 1 || s2.Action.Calls[0].ID != "call_approve" ||
		s3.Result == nil || s3.Result.Kind != "tool_results" || !strings.Contains(s3.Result.Describe, "call_approve ok \"approved\"") || s3.Action == nil || s3.Action.Kind != "model" {
		t.Errorf("steps 1 to 3: %+v\n%+v\n%+v", s1, s2, s3)
	}
	if run.Steps != 4 || run.Counters == nil || run.Counters.Steps != 4 || run.Counters.Requests != 3 || steps[4].Counters.Requests != 3 {
		t.Errorf("run steps %d, counters %+v (want steps 4, requests 3: the complete step is no request)", run.Steps, run.Counters)
	}
}
