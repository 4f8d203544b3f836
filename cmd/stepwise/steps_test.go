package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/internal/server"
	"github.com/stepwise-agent/stepwise/store"
)

// apiStepsView is what the test reads of GET /v1/runs/{id}/steps.
type apiStepsView struct {
	Steps []struct {
		Seq    int `json:"seq"`
		Action *struct {
			Describe string `json:"describe"`
		} `json:"action"`
		Result *struct {
			Describe string `json:"describe"`
		} `json:"result"`
		Counters struct {
			Steps    int `json:"steps"`
			Requests int `json:"requests"`
		} `json:"counters"`
	} `json:"steps"`
}

// apiRunView is what the test reads of GET /v1/runs/{id}.
type apiRunView struct {
	Steps    int `json:"steps"`
	Counters struct {
		Steps    int `json:"steps"`
		Requests int `json:"requests"`
	} `json:"counters"`
}

// exportView is what the test reads of an export file.
type exportView struct {
	Run struct {
		Steps int `json:"steps"`
	} `json:"run"`
	Steps []struct {
		Seq      int `json:"seq"`
		Describe struct {
			Result string `json:"result"`
			Action string `json:"action"`
		} `json:"describe"`
	} `json:"steps"`
}

// TestOneMeaningOfStep drives a real run (a read_file call, a pause for an
// external call, its answer) and checks that show, show --json, show
// --step N, ls --json, run and resume --json, export and the HTTP API count
// the same number of steps and say the same thing of every step N: the
// result it folded in (the answer to the request of step N-1) and the
// action it decided (core's doc, "Steps").
func TestOneMeaningOfStep(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := inProcessStdin(t, db, "", "run", "../../testdata/agents/external.toml", "Buy a desk lamp", "--json", "--quiet")
	want(t, r, exitPaused, "run")
	paused := decodeOutcome(t, r)
	r = inProcessStdin(t, db, "", "resume", paused.RunID, "--results", "../../testdata/results/approve.json", "--json", "--quiet")
	want(t, r, exitCompleted, "resume")
	done := decodeOutcome(t, r)
	id := done.RunID

	r = inProcessStdin(t, db, "", "show", id, "--json")
	want(t, r, 0, "show --json")
	var show showJSON
	if err := json.Unmarshal([]byte(r.stdout), &show); err != nil {
		t.Fatal(err)
	}
	last := len(show.Steps) - 1
	// The run: start, model, read_file, model, pause, model, complete.
	if last != 6 {
		t.Fatalf("show --json lists steps 0..%d, want 0..6:\n%s", last, r.stdout)
	}
	for i, s := range show.Steps {
		if s.Seq != i {
			t.Fatalf("show --json: step %d has seq %d", i, s.Seq)
		}
	}

	// The count: the last step's seq, everywhere.
	var list struct {
		Runs []jsonRun `json:"runs"`
	}
	r = inProcessStdin(t, db, "", "ls", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Runs) != 1 {
		t.Fatalf("ls --json: %v\n%s", err, r.stdout)
	}
	counts := map[string]int{"show --json": show.Run.Steps, "ls --json": list.Runs[0].Steps, "resume --json": done.Steps}
	r = inProcessStdin(t, db, "", "ls")
	if f := strings.Fields(strings.Split(r.stdout, "\n")[1]); len(f) < 4 || f[0] != id {
		t.Fatalf("ls:\n%s", r.stdout)
	} else {
		var n int
		fmt.Sscan(f[3], &n)
		counts["ls"] = n
	}
	text := inProcessStdin(t, db, "", "show", id).stdout
	// show's summary counts steps as ls does; the state's requests= is the
	// core's count of requests (the complete step makes none).
	if !strings.Contains(text, "\n6 steps  phase=done requests=5 ") || strings.Contains(text, " steps=") {
		t.Errorf("show's summary:\n%s", text)
	}

	// The API, in process over the same database.
	st, err := openDB(db, true, store.DurabilityCritical)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := server.New(server.Config{Store: st, AgentsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	get := func(path string, out any) {
		t.Helper()
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var run apiRunView
	get("/v1/runs/"+id, &run)
	var steps apiStepsView
	get("/v1/runs/"+id+"/steps", &steps)
	counts["GET /v1/runs/{id} steps"] = run.Steps
	counts["GET /v1/runs/{id} counters.steps"] = run.Counters.Steps
	counts["GET /steps: last seq"] = steps.Steps[len(steps.Steps)-1].Seq
	if run.Counters.Requests != 5 {
		t.Errorf("counters.requests = %d, want 5 (the complete step is no request)", run.Counters.Requests)
	}

	r = inProcessStdin(t, db, "", "export", id)
	want(t, r, 0, "export")
	var exp exportView
	if err := json.Unmarshal([]byte(r.stdout), &exp); err != nil {
		t.Fatal(err)
	}
	counts["export: last seq"] = exp.Steps[len(exp.Steps)-1].Seq
	// The export's head counts the records it holds, step 0 included.
	if exp.Run.Steps != last+1 || len(exp.Steps) != last+1 {
		t.Errorf("export: head steps %d, %d records; want %d of both", exp.Run.Steps, len(exp.Steps), last+1)
	}
	for what, n := range counts {
		if n != last {
			t.Errorf("%s counts %d steps, show lists steps 0..%d", what, n, last)
		}
	}

	// Step N, everywhere: the result it folded in and its action.
	if len(steps.Steps) != last+1 || len(exp.Steps) != last+1 {
		t.Fatalf("the API lists %d steps, the export %d, show %d", len(steps.Steps), len(exp.Steps), last+1)
	}
	for n := 0; n <= last; n++ {
		b := show.Steps[n]
		r := inProcessStdin(t, db, "", "show", id, "--step", fmt.Sprint(n), "--json")
		var full jsonStepFull
		if err := json.Unmarshal([]byte(r.stdout), &full); err != nil || full.Seq != n {
			t.Fatalf("show --step %d --json: %v\n%s", n, err, r.stdout)
		}
		a := steps.Steps[n]
		var apiAction, apiResult string
		if a.Action != nil {
			apiAction = a.Action.Describe
		}
		if a.Result != nil {
			apiResult = a.Result.Describe
		}
		e := exp.Steps[n]
		if a.Seq != n || e.Seq != n || a.Counters.Steps != n {
			t.Errorf("step %d: API seq %d (counters.steps %d), export seq %d", n, a.Seq, a.Counters.Steps, e.Seq)
		}
		if n > 0 && (b.Action == "" || b.Action != full.Action || b.Action != apiAction || b.Action != e.Describe.Action) {
			t.Errorf("step %d's action:\n show --json   %q\n show --step   %q\n API           %q\n export        %q", n, b.Action, full.Action, apiAction, e.Describe.Action)
		}
		if b.Result != full.Result || b.Result != apiResult || b.Result != e.Describe.Result {
			t.Errorf("step %d's result:\n show --json   %q\n show --step   %q\n API           %q\n export        %q", n, b.Result, full.Result, apiResult, e.Describe.Result)
		}
		// show's text: the step's number heads the result it folded in,
		// or its action when it folded in none.
		head := fmt.Sprintf("\n%4d  %s", n, b.Action)
		if b.Result != "" {
			head = fmt.Sprintf("\n%4d  <- %s\n      %s", n, b.Result, b.Action)
		}
		if n > 0 && !strings.Contains(text, head) {
			t.Errorf("show does not show step %d as %q:\n%s", n, head, text)
		}
		// The deprecated outcome is the next step's result.
		if n < last && b.Outcome != show.Steps[n+1].Result {
			t.Errorf("step %d: outcome %q, step %d's result %q", n, b.Outcome, n+1, show.Steps[n+1].Result)
		}
	}
	// What the steps are: step 1 asks the model and folds in nothing; step
	// 2 folds in that reply and runs the read_file call it asked for; step
	// 5 folds in the external answer.
	if show.Steps[1].Result != "" || !strings.HasPrefix(show.Steps[1].Action, "model primary") ||
		!strings.HasPrefix(show.Steps[2].Result, "reply ") || !strings.Contains(show.Steps[2].Result, "call_prices") ||
		!strings.HasPrefix(show.Steps[2].Action, "tools call_prices read_file") ||
		!strings.HasPrefix(show.Steps[4].Action, "external call_approve") || !strings.Contains(show.Steps[5].Result, "approved by Dana") ||
		!strings.HasPrefix(show.Steps[last].Action, "complete ") {
		t.Errorf("the steps are not the run's:\n%s", text)
	}

	// fork --at N starts from step N's state, and --result answers step
	// N's request: the fork's step 1 folds it in.
	res := writeFile(t, t.TempDir(), "r.json", `[{"tool_call_id": "call_approve", "result": "refused: over budget"}]`)
	r = inProcessStdin(t, db, "", "fork", id, "--at", "4", "--result", res, "--json", "--quiet")
	want(t, r, exitCompleted, "fork")
	fork := decodeOutcome(t, r)
	r = inProcessStdin(t, db, "", "show", fork.RunID, "--json")
	var fs showJSON
	if err := json.Unmarshal([]byte(r.stdout), &fs); err != nil || len(fs.Steps) < 2 {
		t.Fatalf("show the fork: %v\n%s", err, r.stdout)
	}
	if fs.Run.ParentStep != 4 || !strings.Contains(fs.Steps[1].Result, "refused: over budget") || fs.Run.Steps != fork.Steps {
		t.Errorf("fork --at 4: parent step %d, step 1's result %q, steps %d (outcome says %d)", fs.Run.ParentStep, fs.Steps[1].Result, fs.Run.Steps, fork.Steps)
	}
}
