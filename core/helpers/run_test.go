package helpers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fakeHost knows testTools; it refuses a call whose arguments hold the key
// "bad", and gives the n-th call the id "c<n>".
type fakeHost struct{ asked []string }

func (h *fakeHost) IsTool(name string) bool {
	_, ok := helperTool(testTools, name)
	return ok
}

func (h *fakeHost) Call(n int, name, args string) (ToolCall, error) {
	h.asked = append(h.asked, fmt.Sprintf("%d %s %s", n, name, args))
	if !h.IsTool(name) {
		return ToolCall{}, fmt.Errorf("unknown tool %q", name)
	}
	if strings.Contains(args, `"bad"`) {
		return ToolCall{}, errors.New("the tool refuses bad")
	}
	return ToolCall{ID: fmt.Sprintf("c%d", n), Name: name, Args: json.RawMessage(args)}, nil
}

func mustProgram(t *testing.T, text string) *Program {
	t.Helper()
	_, prog, err := ParseProgram(text, testTools)
	if err != nil {
		t.Fatalf("ParseProgram: %v", err)
	}
	return prog
}

func TestRunGoesOnAsResultsComeIn(t *testing.T) {
	text := "<helpers>\nu = find_user(name=\"Sarah\")\nn = u[\"orders\"] + 1\norders(user_id=u[\"id\"], **{\"note\": f\"{n} for {u['name']}\"})\n</helpers>"
	prog := mustProgram(t, text)
	h := &fakeHost{}
	first := prog.Run(text, h, nil)
	want := []ToolCall{{ID: "c1", Name: "find_user", Args: json.RawMessage(`{"name":"Sarah"}`), Raw: `u = find_user(name="Sarah")`}}
	if first.Stop != nil || !reflect.DeepEqual(first.Calls, want) {
		t.Fatalf("first run = %+v, want %+v", first, want)
	}
	// While the call has not answered, the run makes no new call.
	if waiting := prog.Run(text, h, []Result{{ID: "c1", Tool: "find_user", Pending: true}}); waiting.Calls != nil || waiting.Stop != nil {
		t.Fatalf("run while pending = %+v", waiting)
	}
	done := []Result{{ID: "c1", Tool: "find_user", Output: `{"id": 42, "name": "Sarah", "orders": 1.50}`}}
	second := prog.Run(text, h, done)
	want = []ToolCall{{ID: "c2", Name: "orders", Args: json.RawMessage(`{"note":"2.5 for Sarah","user_id":42}`), Raw: `orders(user_id=u["id"], **{"note": f"{n} for {u['name']}"})`}}
	if second.Stop != nil || !reflect.DeepEqual(second.Calls, want) {
		t.Fatalf("second run = %+v\nwant %+v", second, want)
	}
	// Running again over the same results gives the same calls: the
	// program keeps no state of its own.
	if again := prog.Run(text, h, done); !reflect.DeepEqual(again, second) {
		t.Fatalf("run again = %+v, want %+v", again, second)
	}
	if end := prog.Run(text, h, append(done, Result{ID: "c2", Tool: "orders", Output: "ok"})); end.Calls != nil || end.Stop != nil {
		t.Fatalf("run at the end = %+v", end)
	}
}

func TestRunStopsAtAStatementItCannotCompute(t *testing.T) {
	text := "<helpers>\nu = find_user(name=\"a\")\n\norders(user_id=u[\"id\"])\n</helpers>"
	prog := mustProgram(t, text)
	for _, tc := range []struct {
		result Result
		msg    string
	}{
		{Result{ID: "c1", Tool: "find_user", Output: "no such user"}, `u is not JSON, so it has no keys or items: the result of find_user (c1) is the text "no such user"`},
		{Result{ID: "c1", Tool: "find_user", Output: `{"name": "a"}`}, `the key "id" is not in u (its keys: "name")`},
		{Result{ID: "c1", Tool: "find_user", Error: "timeout"}, "u holds no value: the call find_user (c1) failed: timeout"},
	} {
		run := prog.Run(text, &fakeHost{}, []Result{tc.result})
		want := &Stop{Line: 4, Stmt: `orders(user_id=u["id"])`, Msg: tc.msg}
		if run.Calls != nil || !reflect.DeepEqual(run.Stop, want) {
			t.Errorf("%+v:\n got %+v\nwant %+v", tc.result, run.Stop, want)
		}
	}
	// A call the host refuses stops the block too, with the host's words.
	text = "<helpers>\nu = find_user(name=\"a\")\norders(user_id=u + \"bad\")\n</helpers>"
	run := mustProgram(t, text).Run(text, &fakeHost{}, []Result{{ID: "c1", Tool: "find_user", Output: `"x"`}})
	if want := (&Stop{Line: 3, Stmt: `orders(user_id=u + "bad")`, Msg: "the tool refuses bad"}); !reflect.DeepEqual(run.Stop, want) {
		t.Errorf("refused call: %+v, want %+v", run.Stop, want)
	}
}

func TestCheckFindsWhatNeedsNoResult(t *testing.T) {
	text := "<helpers>\nu = find_user(name=\"bad\")\nx = u[\"k\"]\nnope(a=x)\nunknown_too(a=1)\norders(user_id=x)\n</helpers>"
	h := &fakeHost{}
	got := mustProgram(t, text).Check(text, h)
	want := []string{
		"line 2: the tool refuses bad",
		`line 4: unknown tool "nope"`,
		`line 5: unknown tool "unknown_too"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Check =\n %q\nwant\n %q", got, want)
	}
	// orders(user_id=x) waits for a result and is a known tool: not asked.
	for _, a := range h.asked {
		if strings.Contains(a, "orders") {
			t.Errorf("the host was asked about %s", a)
		}
	}
}

func TestLineOf(t *testing.T) {
	for _, tc := range []struct {
		text string
		off  int
		want int
	}{{"a\nb\nc", 0, 1}, {"a\nb\nc", 2, 2}, {"a\nb\nc", 4, 3}, {"a\nb", 99, 2}} {
		if got := lineOf(tc.text, tc.off); got != tc.want {
			t.Errorf("lineOf(%q, %d) = %d, want %d", tc.text, tc.off, got, tc.want)
		}
	}
}
