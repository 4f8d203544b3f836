package server

import (
	"net/http"
	"testing"
)

// A sub-agent's pause over HTTP: the root is awaiting_tool_results with
// the child's call, namespaced; the run lists its child; results posted to
// the root reach the child, and the root completes with the child's answer
// as its call's result.
func TestSubAgentTreeOverHTTP(t *testing.T) {
	f := newFixture(t, Config{Workers: 2})
	r := f.do("POST", "/v1/runs", map[string]any{"agent": "manager", "input": "buy a lamp"})
	want(t, r, http.StatusCreated)
	var run apiRun
	r.json(t, &run)
	run = f.waitFor(run.ID, "awaiting_tool_results")
	if len(run.Pending) != 1 || run.Pending[0].ID != "call_research/call_ask" || run.Pending[0].Name != "ask_person" {
		t.Fatalf("the root's pending calls: %+v", run.Pending)
	}
	if len(run.Children) != 1 || run.Children[0].ID != run.ID+".call_research" || run.Children[0].Agent != "researcher" ||
		run.Children[0].Status != "awaiting_tool_results" || run.Children[0].Tool != "research" {
		t.Fatalf("the root's children: %+v", run.Children)
	}
	bad := f.do("POST", "/v1/runs/"+run.ID+"/results", `[{"tool_call_id": "call_nope/call_ask", "result": "x"}]`)
	if bad.status != http.StatusBadRequest {
		t.Fatalf("results for no sub-agent call: %d %s", bad.status, bad.body)
	}
	want(t, f.do("POST", "/v1/runs/"+run.ID+"/results", `[{"tool_call_id": "call_research/call_ask", "result": "brass"}]`), http.StatusOK)
	done := f.waitFor(run.ID, "completed")
	if done.Answer != "We buy the brass lamp." {
		t.Fatalf("the root's answer: %q", done.Answer)
	}
	child := f.waitFor(run.ID+".call_research", "completed")
	if child.Answer != "Brass." {
		t.Fatalf("the child's answer: %q", child.Answer)
	}
}
