package helpers

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValues: what an assignment computes, written back as a literal call's
// arguments (the value of x passed as user_id).
func TestValues(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`0.1 + 0.2`, `0.3`},
		{`1 + 2.0`, `3.0`},
		{`123456789012345678901234567890 + 1`, `123456789012345678901234567891`},
		{`-5 + 2`, `-3`},
		{`1e2 + 1`, `101.0`}, // 1e2 is a float, as in Python
		{`"a" + 'b' + """c"""`, `"abc"`},
		{`f"{1.50} {True} {None} {[1, {'b': 2, 'a': 1}]}"`, `"1.50 True None [1,{\"a\":1,\"b\":2}]"`},
		{`{"k": [10, 20, 30]}["k"][-1]`, `30`},
		{`(1, "x")`, `[1,"x"]`},
	} {
		text := "<helpers>\nx = " + tc.expr + "\norders(user_id=x)\n</helpers>"
		prog := mustProgram(t, text)
		run := prog.Run(text, &fakeHost{}, nil)
		if run.Stop != nil || len(run.Calls) != 1 {
			t.Errorf("%s: %+v", tc.expr, run)
			continue
		}
		var args map[string]json.RawMessage
		if err := json.Unmarshal(run.Calls[0].Args, &args); err != nil || string(args["user_id"]) != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, args["user_id"], tc.want)
		}
	}
}

func TestValueErrors(t *testing.T) {
	for _, tc := range []struct{ expr, msg string }{
		{`[1][5]`, "the index 5 is out of range: the value has 1 item(s)"},
		{`{"a": 1}[0]`, "the value is a dict: its keys are strings, not a number"},
		{`"s"["k"]`, "the value is a str: subscripts read dicts and lists"},
		{`1e5000 + 1`, "1e5000 is out of range for a float"},
	} {
		_, err := Parse("<helpers>\nx = "+tc.expr+"\norders(user_id=x)\n</helpers>", testTools)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.expr, err, tc.msg)
		}
	}
}

func TestCostOfIsBounded(t *testing.T) {
	shared := []any{"0123456789"}
	for range 30 {
		shared = []any{shared, shared} // 2^30 leaves, shared
	}
	if got := costOf(shared, 1000); got != 1001 {
		t.Errorf("costOf = %d, want the limit + 1", got)
	}
	if got := costOf(map[string]any{"ab": json.Number("12")}, 1000); got != 2+2+2+2 {
		t.Errorf("costOf = %d", got)
	}
}
