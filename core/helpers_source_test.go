package core

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// sourceConfig is programConfig with Policy.HelpersSourceText.
func sourceConfig() Config {
	cfg := programConfig()
	cfg.Policy.HelpersSourceText = true
	return cfg
}

// sourceWarning is the warning of an argument passed as its source text.
func sourceWarning(line int, call, expr string) string {
	return fmt.Sprintf("line %d: %s=...): the expression %s is outside the helpers subset; passed as its source text", line, call, expr)
}

// argOf reads argument key of a call's arguments.
func argOf(t *testing.T, c ToolCall, key string) any {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal(c.Args, &args); err != nil {
		t.Fatalf("%s: %v", c.Args, err)
	}
	return args[key]
}

// TestHelpersSourceText: under Policy.HelpersSourceText, an argument
// outside the helpers subset is passed as its source text, and the turn
// records a warning naming its line; without the policy the reply is the
// correction it always was.
func TestHelpersSourceText(t *testing.T) {
	for _, c := range []struct{ kind, expr, refusal string }{
		{"undefined names", `first + " " + last`, "first is not defined"},
		{"a builtin", `len("abc")`, "len(...) is not available"},
		{"a method", `a.upper()`, "attribute access and methods are not supported"},
		{"an attribute", `user.name`, "attribute access and methods are not supported"},
		{"a comprehension", `[w for w in words if w]`, "w is not defined"},
		{"a lambda", `lambda x: x`, "found the keyword lambda"},
		{"a condition", `"a" if ok else "b"`, "found if"},
		{"a comparison", `1 < 2`, "found the operator <"},
		{"another operator", `6 * 7`, "found the operator *"},
		{"a slice", `"abc"[1:]`, "slices ([a:b]) are not supported"},
		{"a format spec", `f"{1.5:.1f}"`, "format specs such as {x:.2f} are not supported"},
		{"a constant the evaluator refuses", `"n" + 1`, "+ joins two strings or adds two numbers"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			reply := "Looking.\n<helpers>\nnote(text=\"first\")\nlookup(q=" + c.expr + ")\n</helpers>"
			st := replyWith(t, programConfig(), reply)
			if st.Turn != nil || !strings.Contains(lastContent(st), c.refusal) || st.Counters.Corrections != 1 {
				t.Errorf("without the policy: %s\n%s", DescribeState(st), lastContent(st))
			}
			st = replyWith(t, sourceConfig(), reply)
			if st.Turn == nil || len(st.Turn.Calls) != 2 || st.Counters.Corrections != 0 {
				t.Fatalf("with the policy: %s\n%s", DescribeState(st), lastContent(st))
			}
			if got := argOf(t, st.Turn.Calls[1], "q"); got != c.expr {
				t.Errorf("q = %#v, want the source text %q", got, c.expr)
			}
			if m := st.Turn.Parse; m == nil || !reflect.DeepEqual(m.Warnings, []string{sourceWarning(4, "lookup(q", c.expr)}) || len(m.Spans) != 2 {
				t.Errorf("parse meta %+v", m)
			}
		})
	}
}

// TestHelpersSourceTextStillCorrects: the string goes to the validator
// as any argument (a number wanted: the usual correction), and what is not
// Python, or uses a tool inside a value, is a correction under the policy
// too.
func TestHelpersSourceTextStillCorrects(t *testing.T) {
	cfg := sourceConfig()
	for reply, want := range map[string]string{
		"<helpers>\napprove(amount=price.total)\n</helpers>":          `argument "amount": expected a number, found the string "price.total"`,
		"<helpers>\nlookup(q=(1, 2)\n</helpers>":                      "the call to lookup( is not closed before </helpers>",
		"<helpers>\nlookup(q=\"abc)\n</helpers>":                      "this string is not closed on its line",
		"<helpers>\nlookup(q=a b)\n</helpers>":                        "a is not defined",
		"<helpers>\nlookup(q=note(text=\"x\"))\n</helpers>":           "calls cannot be nested",
		"<helpers>\nlookup(q=str(note(text=\"x\")))\n</helpers>":      "str(...) is not available",
		"<helpers>\nlookup(q=true)\n</helpers>":                       "true is not Python; write True",
		"<helpers>\nx = \"a\".upper()\nlookup(q=x)\n</helpers>":       "attribute access or a method call on a value is not supported",
		"<helpers>\nlookup(**{\"q\": len(\"a\")})\n</helpers>":        "len(...) is not available",
		"<helpers>\nn = \"x\"\nv = n[\"a\"]\nlookup(q=v)\n</helpers>": `line 3 (v = n["a"]): n is a str`,
	} {
		st := replyWith(t, cfg, reply)
		if st.Turn != nil || !strings.Contains(lastContent(st), want) {
			t.Errorf("%q: %s\n%s\nwant %q", reply, DescribeState(st), lastContent(st), want)
		}
	}
}

// TestHelpersSourceTextInPrograms: in a program, an argument outside the
// subset is its source text too, the warning goes on the turn, and the
// program read again from its message as the turn goes on (programOf)
// reads it the same; an argument the static check would refuse is its
// source text; and the warnings survive the state's encoding.
func TestHelpersSourceTextInPrograms(t *testing.T) {
	cfg := sourceConfig()
	st := replyWith(t, cfg, "<helpers>\nr = lookup(q=1)\nlookup(q=r[\"id\"])\nnote(text=str(r))\n</helpers>")
	want := []string{sourceWarning(4, "note(text", "str(r)")}
	if st.Turn == nil || st.Turn.Program == nil || st.Turn.Parse == nil || !reflect.DeepEqual(st.Turn.Parse.Warnings, want) {
		t.Fatalf("%s\n%s", DescribeState(st), lastContent(st))
	}
	b, err := EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeState(b); err != nil || !reflect.DeepEqual(back.Turn.Parse.Warnings, want) {
		t.Fatalf("round trip: %+v %v", back.Turn, err)
	}
	_, st = answerAll(t, cfg, st, `{"id": 5}`)
	a := mustStep(t, cfg, st)
	if got := DescribeAction(a); got != `tools call_1_2 lookup {"q":5}; call_1_3 note {"text":"str(r)"}` {
		t.Fatalf("second batch: %s", got)
	}
	if !reflect.DeepEqual(a.Next().Turn.Parse.Warnings, want) {
		t.Errorf("the warnings stay with the turn: %+v", a.Next().Turn.Parse)
	}

	st = replyWith(t, cfg, "<helpers>\nn = \"x\"\nlookup(q=n[\"a\"])\nnote(text=n)\n</helpers>")
	if st.Turn == nil || DescribeAction(mustStep(t, cfg, st)) != `tools call_1_1 lookup {"q":"n[\"a\"]"}; call_1_2 note {"text":"x"}` ||
		!reflect.DeepEqual(st.Turn.Parse.Warnings, []string{sourceWarning(3, "lookup(q", `n["a"]`)}) {
		t.Fatalf("a static error: %s\n%s", DescribeState(st), lastContent(st))
	}
	st = replyWith(t, programConfig(), "<helpers>\nn = \"x\"\nlookup(q=n[\"a\"])\nnote(text=n)\n</helpers>")
	if st.Turn != nil || !strings.Contains(lastContent(st), `line 3 (lookup(q=n["a"])): n is a str`) {
		t.Fatalf("without the policy: %s", lastContent(st))
	}
}

// TestHelpersSourceTextOnlyWithTheHelpersFormat: the policy is the
// helpers format's; the auto format reads helpers blocks as always. It is
// left out of a config's JSON when off, so configs that do not set it keep
// their bytes and hash.
func TestHelpersSourceTextOnlyWithTheHelpersFormat(t *testing.T) {
	cfg := sourceConfig()
	cfg.Format = FormatAuto
	st := replyWith(t, cfg, "<helpers>\nlookup(q=len(\"a\"))\n</helpers>")
	if st.Turn != nil || !strings.Contains(lastContent(st), "len(...) is not available") {
		t.Fatalf("auto: %s", DescribeState(st))
	}
	b, _ := json.Marshal(programConfig())
	on, _ := json.Marshal(sourceConfig())
	if strings.Contains(string(b), "helpers_source_text") || !strings.Contains(string(on), `"helpers_source_text":true`) ||
		ConfigHash(programConfig()) == ConfigHash(sourceConfig()) {
		t.Errorf("config JSON:\n%s\n%s", b, on)
	}
}

// genOutsideExpr draws a Python expression outside the helpers subset: its
// outermost form is one the subset refuses (a name never bound, a function
// that is not a tool, a method, another operator, a comparison, not, a
// condition, a comprehension, a lambda, a slice, a set), over literals,
// the bound name r and such expressions in brackets.
func genOutsideExpr(t *rapid.T, depth int) string {
	operand := func(label string) string {
		if depth == 0 || rapid.IntRange(0, 2).Draw(t, label+"-nest") > 0 {
			return rapid.SampledFrom([]string{`1`, `2.5`, `"a"`, `'b c'`, `None`, `True`, `r`, `data`, `[1, r]`, `{"k": 1}`, `f"<{r}>"`, `r["id"]`}).Draw(t, label)
		}
		return "(" + genOutsideExpr(t, depth-1) + ")"
	}
	a := operand("a")
	switch rapid.IntRange(0, 10).Draw(t, "form") {
	case 0:
		return rapid.SampledFrom([]string{"first_name", "user_id", "data", "Value", "x1", "naïve"}).Draw(t, "undefined")
	case 1:
		return rapid.SampledFrom([]string{"len", "str", "sorted", "print", "json.dumps"}).Draw(t, "function") + "(" + a + ")"
	case 2:
		return "(" + a + ")." + rapid.SampledFrom([]string{"upper()", "get('k', 0)", "name", "items()"}).Draw(t, "method")
	case 3:
		op := rapid.SampledFrom([]string{"*", "-", "/", "//", "%", "**", "==", "<", "!=", ">=", "and", "or", "in", "not in", "is", "is not", "|"}).Draw(t, "op")
		return a + " " + op + " " + operand("b")
	case 4:
		return "not " + a
	case 5:
		return a + " if " + operand("b") + " else " + operand("c")
	case 6:
		return "[v for v in " + a + " if v]"
	case 7:
		return "{k: " + a + " for k in " + operand("b") + "}"
	case 8:
		return "lambda v, *w: " + a
	case 9:
		return "(" + a + ")[1:" + rapid.SampledFrom([]string{"", "2", "-1"}).Draw(t, "stop") + "]"
	}
	return "{" + a + ", " + operand("b") + "}"
}

// Property: under Policy.HelpersSourceText, no reply of calls whose
// arguments are drawn outside the subset (among arguments inside it) is
// refused for it: the turn is made, each such argument holds its source
// text exactly, and each gives exactly one warning, naming its line and
// call, in order. Without the policy the same reply is a correction.
func TestPropHelpersSourceText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := sourceConfig()
		cfg.Limits.MaxRepeats = 100
		reply := "<helpers>\n"
		var warnings []string
		type arg struct {
			tool, key string
			value     any // the value expected: the source text, or the value inside the subset
		}
		var args []arg
		bound := rapid.Bool().Draw(t, "bound")
		if bound {
			reply += "r = lookup(q=0)\n"
			args = append(args, arg{"lookup", "q", float64(0)})
		}
		for i := range rapid.IntRange(1, 6).Draw(t, "calls") {
			a := arg{tool: "lookup", key: "q"}
			if rapid.Bool().Draw(t, "note") {
				a.tool, a.key = "note", "text"
			}
			sep := rapid.SampledFrom([]string{"", " ", "\n  "}).Draw(t, "space")
			head := a.tool + "(" + sep
			if !rapid.Bool().Draw(t, "positional") {
				head = a.tool + "(" + a.key + "=" + sep
			}
			var expr string
			switch {
			case i == 0 || rapid.IntRange(0, 2).Draw(t, "outside") > 0:
				expr = genOutsideExpr(t, 2)
				a.value = expr
				line := strings.Count(reply+head, "\n") + 1
				warnings = append(warnings, sourceWarning(line, a.tool+"("+a.key, expr))
			case bound && rapid.Bool().Draw(t, "use-r"):
				expr, a.value = "r", `{"id": 3}`
			default:
				expr, a.value = `"lit"`, "lit"
			}
			reply += head + expr + sep + ")\n"
			args = append(args, a)
		}
		reply += "</helpers>"
		st, _ := Start(cfg, Request{Input: "go"})
		a, _ := Step(cfg, st)
		st, err := Resume(cfg, a.Next(), ModelReply{Text: reply})
		if err != nil || st.Turn == nil {
			t.Fatalf("refused: %v\n%s\n%s", err, reply, lastContent(st))
		}
		if !reflect.DeepEqual(st.Turn.Parse.Warnings, warnings) {
			t.Fatalf("warnings\n%q\nwant\n%q\n%s", st.Turn.Parse.Warnings, warnings, reply)
		}
		var made []ToolCall
		for range 10 {
			a, err := Step(cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			calls := a.Next().PendingCalls()
			if len(calls) == 0 {
				break
			}
			made = append(made, calls...)
			res := make([]ToolResult, len(calls))
			for i, c := range calls {
				res[i] = ToolResult{CallID: c.ID, Output: `{"id": 3}`}
			}
			if st, err = Resume(cfg, a.Next(), ToolResults{Results: res}); err != nil {
				t.Fatal(err)
			}
		}
		if len(made) != len(args) {
			t.Fatalf("%d calls made, want %d\n%s", len(made), len(args), reply)
		}
		for i, c := range made {
			var got map[string]any
			if err := json.Unmarshal(c.Args, &got); err != nil || c.Name != args[i].tool || !reflect.DeepEqual(got, map[string]any{args[i].key: args[i].value}) {
				t.Fatalf("call %d: %s %s, want %s=%#v\n%s", i+1, c.Name, c.Args, args[i].key, args[i].value, reply)
			}
		}
		off := programConfig()
		st, _ = Start(off, Request{Input: "go"})
		a, _ = Step(off, st)
		if st, err = Resume(off, a.Next(), ModelReply{Text: reply}); err != nil || st.Turn != nil {
			t.Fatalf("without the policy: %v %s\n%s", err, DescribeState(st), reply)
		}
	})
}
