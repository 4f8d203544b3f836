package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/shell"
)

// TestStepRequest: GET /v1/runs/{id}/steps/{seq}/request gives the
// request the model received at a step, as show --step N --request --json
// prints it; a step without a model call is 400, an unknown run or step
// 404, a seq that is not a number 400; openapi.json's schema is the
// object's.
func TestStepRequest(t *testing.T) {
	f := newFixture(t, Config{Workers: 1})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy a lamp", "options": map[string]string{"wait": "5s"}})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	run = f.waitFor(run.ID, "awaiting_tool_results")

	r = f.do("GET", "/v1/runs/"+run.ID+"/steps/1/request", nil)
	want(t, r, http.StatusOK)
	var got shell.StepRequest
	r.json(t, &got)
	var body struct {
		Provider string
		Call     int
		Reply    int
		Messages []struct{ Role, Content string }
		Tools    []struct{ Name string }
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	if got.Step != 1 || got.Role != "primary" || got.Call != 1 || got.Provider != "script" || got.Method != "" ||
		body.Call != 1 || body.Reply != 1 || len(body.Messages) != 1 || body.Messages[0].Content != "buy a lamp" ||
		len(body.Tools) != 1 || body.Tools[0].Name != "approve" {
		t.Errorf("step 1's request: %+v\n%s", got, got.Body)
	}
	if strings.Contains(string(r.body), f.srv.agents.dir) {
		t.Errorf("the answer names the agents directory: %s", r.body)
	}

	for _, c := range []struct {
		path   string
		status int
		code   string
		says   string
	}{
		{"/v1/runs/" + run.ID + "/steps/2/request", http.StatusBadRequest, codeBadRequest, "step 2 made no model call: its action is external call_approve approve"},
		{"/v1/runs/" + run.ID + "/steps/0/request", http.StatusBadRequest, codeBadRequest, "step 0 made no model call: it is the run's start"},
		{"/v1/runs/" + run.ID + "/steps/9/request", http.StatusNotFound, codeNotFound, ""},
		{"/v1/runs/nope/steps/1/request", http.StatusNotFound, codeNotFound, ""},
		{"/v1/runs/" + run.ID + "/steps/x/request", http.StatusBadRequest, codeBadRequest, "want a step number"},
	} {
		r := f.do("GET", c.path, nil)
		want(t, r, c.status)
		if code := r.code(t); code != c.code || !strings.Contains(string(r.body), c.says) {
			t.Errorf("%s: %s", c.path, r.body)
		}
	}

	doc := readOpenAPI(t)
	checkSchema(t, doc, "StepRequest", doc.Components.Schemas["StepRequest"], reflect.TypeOf(shell.StepRequest{}))
}
