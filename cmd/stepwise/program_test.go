package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// inProcess runs the CLI in this process through its env, with db as the
// database; paths are relative to cmd/stepwise.
func inProcessStdin(t *testing.T, db, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string {
		switch k {
		case "STEPWISE_DB":
			return db
		case "NO_COLOR":
			return "1"
		}
		return ""
	}}
	code := e.main(args)
	return result{code, out.String(), errb.String()}
}

type showOut struct {
	Run struct {
		Status  string     `json:"status"`
		Pending []jsonCall `json:"pending_tool_calls"`
	} `json:"run"`
	Steps []struct {
		Seq     int    `json:"seq"`
		Action  string `json:"action"`
		Outcome string `json:"outcome"`
	} `json:"steps"`
}

func showRun(t *testing.T, db, id string) showOut {
	t.Helper()
	r := inProcessStdin(t, db, "", "show", id, "--json")
	want(t, r, 0, "show", id)
	var s showOut
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("show --json %q: %v", r.stdout, err)
	}
	return s
}

// actions lists the timeline's actions from step 1 on.
func (s showOut) actions() []string {
	var out []string
	for _, st := range s.Steps[1:] {
		out = append(out, st.Action)
	}
	return out
}

// A helpers block that is a program: the second call's arguments are
// computed from the first call's JSON result (a subscript and an f-string),
// and the run replays identically.
func TestHelpersProgramSecondCallUsesFirstResult(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := inProcessStdin(t, db, "", "run", "../../testdata/agents/helpers-program.toml", "What did Sarah order?", "--json")
	want(t, r, exitCompleted)
	o := decodeOutcome(t, r)
	if o.Answer != "Sarah (user 7) has 3 orders." || strings.Join(o.ToolsUsed, ",") != "find_user,orders" {
		t.Fatalf("outcome = %+v", o)
	}
	s := showRun(t, db, o.RunID)
	got := s.actions()
	wantActions := []string{
		`model primary messages=2 last=user: "What did Sarah order?"`,
		`tools call_1_1 find_user {"name":"Sarah"}`,
		`tools call_1_2 orders {"label":"orders of Sarah","user_id":7}`,
	}
	if len(got) < 4 || !slices.Equal(got[:3], wantActions) || s.Steps[3].Outcome != `results call_1_2 ok "orders of Sarah: 3 orders (user 7)"` {
		t.Fatalf("timeline:\n%s\nstep 3 got %s", strings.Join(got, "\n"), s.Steps[3].Outcome)
	}
	want(t, inProcessStdin(t, db, "", "replay", o.RunID), exitCompleted, "replay")
}

// Internal and external calls of one turn run in the order written: the
// internal call before the external one runs, the run pauses in the middle
// of the block for the external call (its pending call carries the
// statement it came from), results for a call that is not pending yet are
// refused, and the internal call written after it runs once the answer is
// in, although its arguments were computed (from the first result) with
// the external call's.
func TestMixedCallsRunInOrderAndPauseInTheMiddle(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	r := inProcessStdin(t, db, "", "run", "../../testdata/agents/mixed-order.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	var paused jsonOutcome
	if err := json.Unmarshal([]byte(r.stdout), &paused); err != nil {
		t.Fatal(err)
	}
	wantCall := jsonCall{ID: "call_1_2", Name: "approve_purchase", Arguments: json.RawMessage(`{"amount_eur":42.50,"item":"desk lamp"}`),
		Raw: `ok = approve_purchase(item=price["item"], amount_eur=price["eur"])`}
	if paused.Status != "awaiting_tool_results" || len(paused.Pending) != 1 || !sameCall(paused.Pending[0], wantCall) {
		t.Fatalf("paused: %s", r.stdout)
	}
	id := paused.RunID
	s := showRun(t, db, id)
	if got := s.actions(); len(got) != 3 || !strings.HasPrefix(got[1], "tools call_1_1 lookup_price") || !strings.HasPrefix(got[2], "external call_1_2 approve_purchase") {
		t.Fatalf("paused timeline (the receipt must not have run):\n%s", strings.Join(got, "\n"))
	}
	if s.Run.Status != "awaiting_tool_results" || len(s.Run.Pending) != 1 || !sameCall(s.Run.Pending[0], wantCall) {
		t.Fatalf("show --json of the paused run: %+v", s.Run)
	}
	ls := inProcessStdin(t, db, "", "ls", "--json")
	want(t, ls, 0, "ls")
	if !strings.Contains(ls.stdout, `"raw":"ok = approve_purchase(item=price[\"item\"], amount_eur=price[\"eur\"])"`) {
		t.Fatalf("ls --json lacks the pending call: %s", ls.stdout)
	}

	for name, body := range map[string]string{
		"a call after the pause": `[{"tool_call_id": "call_1_3", "result": "x"}]`,
		"a call before it":       `[{"tool_call_id": "call_1_1", "result": "x"}]`,
		"none":                   `[]`,
	} {
		bad := inProcessStdin(t, db, body, "resume", id, "--results", "-")
		if bad.code != exitUsage {
			t.Fatalf("%s: exit %d, want %d: %s", name, bad.code, exitUsage, bad.stderr)
		}
	}
	if got := showRun(t, db, id).actions(); len(got) != 3 {
		t.Fatalf("refused results changed the run:\n%s", strings.Join(got, "\n"))
	}

	r = inProcessStdin(t, db, `[{"tool_call_id": "call_1_2", "result": "approved by Dana"}]`, "resume", id, "--results", "-", "--json")
	want(t, r, exitCompleted, "resume")
	got := showRun(t, db, id).actions()
	if len(got) != 6 || !strings.HasPrefix(got[1], "tools call_1_1 lookup_price") || !strings.HasPrefix(got[2], "external call_1_2") ||
		got[3] != `tools call_1_3 write_receipt {"note":"desk lamp for 42.50 EUR"}` || !strings.HasPrefix(got[4], "model primary") {
		t.Fatalf("timeline:\n%s", strings.Join(got, "\n"))
	}
	want(t, inProcessStdin(t, db, "", "replay", id), exitCompleted, "replay")
}

func sameCall(a, b jsonCall) bool {
	return a.ID == b.ID && a.Name == b.Name && string(a.Arguments) == string(b.Arguments) && a.Raw == b.Raw
}

// Every --json output (run, resume, fork, show, ls) names statuses from one
// vocabulary, the one the help documents, and always has pending_tool_calls
// as an array: [] when nothing is pending, never null or absent; a pending
// call has id, name, arguments and raw ("" for a native call).
func TestJSONStatusVocabularyAndPendingCalls(t *testing.T) {
	var names []string
	for _, s := range store.Statuses {
		names = append(names, string(s))
	}
	if !strings.Contains(strings.Join(strings.Fields(jsonStatusHelp), " "), strings.Join(names, ", ")) {
		t.Fatalf("the help's vocabulary is not store.Statuses (%s):\n%s", strings.Join(names, ", "), jsonStatusHelp)
	}
	db := filepath.Join(t.TempDir(), "t.db")
	// check decodes one run object and checks its status and pending calls.
	check := func(what string, obj map[string]json.RawMessage, paused bool) {
		t.Helper()
		var status string
		if err := json.Unmarshal(obj["status"], &status); err != nil || !store.Status(status).Valid() {
			t.Fatalf("%s: status %s is not one of %s", what, obj["status"], strings.Join(names, ", "))
		}
		raw, ok := obj["pending_tool_calls"]
		var pending []map[string]json.RawMessage
		if !ok || string(raw) == "null" || json.Unmarshal(raw, &pending) != nil {
			t.Fatalf("%s: pending_tool_calls is %s (present: %v)", what, raw, ok)
		}
		if paused != (status == "awaiting_tool_results") || paused != (len(pending) > 0) {
			t.Fatalf("%s: status %s with pending_tool_calls %s", what, status, raw)
		}
		for _, c := range pending {
			for _, k := range []string{"id", "name", "arguments", "raw"} {
				if _, ok := c[k]; !ok {
					t.Fatalf("%s: a pending call lacks %q: %s", what, k, raw)
				}
			}
		}
	}
	object := func(what, out string) map[string]json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%s: %q: %v", what, out, err)
		}
		return m
	}
	runID := func(m map[string]json.RawMessage) string {
		var id string
		_ = json.Unmarshal(m["run_id"], &id)
		return id
	}

	done := inProcessStdin(t, db, "", "run", "../../testdata/agents/format-helpers.toml", "Add 2 and 40", "--json")
	want(t, done, exitCompleted, "run")
	doneRun := object("run (completed)", done.stdout)
	check("run (completed)", doneRun, false)
	failed := inProcessStdin(t, db, "", "run", "../../testdata/agents/looper.toml", "loop", "--json")
	want(t, failed, exitFailed, "run looper")
	check("run (failed)", object("run (failed)", failed.stdout), false)
	paused := inProcessStdin(t, db, "", "run", "../../testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, paused, exitPaused, "run external")
	pausedRun := object("run (paused)", paused.stdout)
	check("run (paused, native)", pausedRun, true)
	if !strings.Contains(paused.stdout, `"raw":""`) {
		t.Fatalf("a native pending call has raw %q: %s", "", paused.stdout)
	}
	pausedID := runID(pausedRun)

	show := object("show (paused)", inProcessStdin(t, db, "", "show", pausedID, "--json").stdout)
	check("show (paused)", object("show run", string(show["run"])), true)
	show = object("show (completed)", inProcessStdin(t, db, "", "show", runID(doneRun), "--json").stdout)
	check("show (completed)", object("show run", string(show["run"])), false)

	var list struct {
		Runs []map[string]json.RawMessage `json:"runs"`
	}
	ls := inProcessStdin(t, db, "", "ls", "--json")
	want(t, ls, 0, "ls")
	if err := json.Unmarshal([]byte(ls.stdout), &list); err != nil || len(list.Runs) != 3 {
		t.Fatalf("ls --json: %s", ls.stdout)
	}
	for _, r := range list.Runs {
		var id string
		_ = json.Unmarshal(r["id"], &id)
		check("ls "+id, r, id == pausedID)
	}

	fork := inProcessStdin(t, db, "", "fork", runID(doneRun), "--at", "1", "--json")
	want(t, fork, exitCompleted, "fork")
	check("fork", object("fork", fork.stdout), false)
	res := inProcessStdin(t, db, `[{"tool_call_id": "call_approve", "result": "approved"}]`, "resume", pausedID, "--results", "-", "--json")
	want(t, res, exitCompleted, "resume")
	check("resume", object("resume", res.stdout), false)
}

// The sabre preset passes an argument outside the helpers subset as its
// source text (Policy.HelpersSourceText): the call runs with the string,
// and the run replays identically, the stored agent carrying the policy.
func TestSabrePresetPassesSourceText(t *testing.T) {
	dir := t.TempDir()
	script := `{"text": "<helpers>\norders(user_id=7, label=\", \".join(names))\n</helpers>"}` + "\n" + `{"text": "Done."}` + "\n"
	agent := `preset = "sabre"
name = "sabre-source-text"

[models.primary]
provider = "script"
script = "s.jsonl"

[[tools]]
name = "orders"
command = ["printf", "%s: 3 orders (user %s)", "{{label}}", "{{user_id}}"]
parameters = '''{"type": "object", "properties": {"user_id": {"type": "integer"}, "label": {"type": "string"}}, "required": ["user_id"]}'''
`
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.toml"), []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "t.db")
	r := inProcessStdin(t, db, "", "run", filepath.Join(dir, "a.toml"), "go", "--json")
	want(t, r, exitCompleted)
	o := decodeOutcome(t, r)
	s := showRun(t, db, o.RunID)
	if got := s.actions(); len(got) < 2 || got[1] != `tools call_1_1 orders {"label":"\", \".join(names)","user_id":7}` ||
		s.Steps[2].Outcome != `results call_1_1 ok "\", \".join(names): 3 orders (user 7)"` {
		t.Fatalf("timeline:\n%s\nstep 2: %s", strings.Join(got, "\n"), s.Steps[2].Outcome)
	}
	want(t, inProcessStdin(t, db, "", "replay", o.RunID), exitCompleted, "replay")
}
