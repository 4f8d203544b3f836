package helpers

import (
	"reflect"
	"strings"
	"testing"
)

var sourceText = Options{SourceText: true}

// TestSourceTextPassesExpressionsOutsideTheSubset: with
// Options.SourceText, an argument that is a Python expression outside the
// subset is a str holding its text, with one warning naming its line and
// call; without it, the same reply is refused.
func TestSourceTextPassesExpressionsOutsideTheSubset(t *testing.T) {
	for _, tc := range []struct{ kind, expr, refusal string }{
		{"undefined names joined", `first + " " + last`, "first is not defined"},
		{"an undefined name", `user_id`, "user_id is not defined"},
		{"a builtin", `len("abc")`, "len(...) is not available"},
		{"a function of a module", `os.getcwd()`, "os.…: attribute access and methods are not supported"},
		{"a method", `"a,b".split(",")`, "attribute access or a method call on a value is not supported"},
		{"another operator", `3 * 4`, "found the operator *"},
		{"a comparison", `1 < 2 <= 3 != 4`, "found the operator <"},
		{"not and or", `not 1 and 2 or 3`, "found the keyword not"},
		{"in and is not", `1 in [1] is not None`, "found in"},
		{"a condition", `"a" if 1 else "b"`, "found if"},
		{"a list comprehension", `[x * 2 for x in range(3) if x]`, "x is not defined"},
		{"a dict comprehension", `{k: v for k, v in {}.items()}`, "k is not defined"},
		{"a set comprehension", `{x for x in "ab"}`, "x is not defined"},
		{"a generator", `sum(x for x in (1, 2))`, "sum(...) is not available"},
		{"a lambda", `lambda x, *a, y=1, **k: x`, "found the keyword lambda"},
		{"a slice", `"abc"[1:]`, "slices ([a:b]) are not supported"},
		{"a walrus", `(n := 5)`, "n is not defined"},
		{"a set", `{"a", "b"}`, "sets are not supported"},
		{"a starred list", `[*"ab", 1]`, "expected a value"},
		{"a format spec", `f"{1.5:.2f}"`, "format specs such as {x:.2f} are not supported"},
		{"a conversion", `f"{'a'!r}"`, "conversions such as {x!r} are not supported"},
		{"an f-string field outside", `f"{len('ab')}"`, "len(...) is not available"},
		{"a nested f-string", `f"{f'{x}'}"`, "x is not defined"},
		{"bytes", `b"abc"`, "bytes literals"},
		{"a complex number", `2j`, "complex numbers are not supported"},
		{"a named escape", `"\N{BULLET}"`, `\N{...} escapes are not supported`},
		{"a constant type error", `"n" + 1`, "+ joins two strings or adds two numbers"},
		{"a constant subscript error", `[1, 2][5]`, "the index 5 is out of range"},
		{"a dict with number keys", `{1: "a"}`, "dict keys must be strings"},
		{"an ellipsis", `...`, "expected a value"},
		{"over lines", "[\n  x  # the first\n  for x in y\n]", "x is not defined"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			text := "Looking.\n<helpers>\nfind_user(name=\"a\")\norders(user_id=" + tc.expr + ", x=1)\n</helpers>"
			_, err := Parse(text, testTools)
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("without SourceText: %v, want %q", err, tc.refusal)
			}
			p, err := sourceText.Parse(text, testTools)
			if err != nil {
				t.Fatalf("with SourceText: %v", err)
			}
			want := []Call{{"find_user", `{"name":"a"}`}, {"orders", `{"user_id":` + jsonQuoted(tc.expr) + `,"x":1}`}}
			if !reflect.DeepEqual(p.Calls, want) || p.Program != nil {
				t.Errorf("calls %+v (program %v), want %+v", p.Calls, p.Program != nil, want)
			}
			w := "line 4: orders(user_id=...): the expression " + tc.expr + " is outside the helpers subset; passed as its source text"
			if !reflect.DeepEqual(p.Warnings, []string{w}) {
				t.Errorf("warnings %q, want %q", p.Warnings, w)
			}
		})
	}
}

// TestSourceTextKeepsTheRefusals: text that is not a Python expression,
// a tool used inside a value, true/false/null and the bounds are refused
// with SourceText as without it, with the same error.
func TestSourceTextKeepsTheRefusals(t *testing.T) {
	for _, expr := range []string{
		`first +`, `(1, 2`, `[1, 2))`, `"abc`, `x!`, `1 2`, `a b`, `f"{x"`, `f"{}"`, `f"}"`, `"\x4"`, `"\U00110000"`, `012`, `1_`, `0b12`, `1abc`,
		`lambda x x`, `x if y`, `[x for x]`, `a[]`, `a.1`, `a.if`, `not`, `- not x`, `a == not b`, `yield x`, `*x`, `x = 1`, `a += 1`, `$x`, `ub"x"`,
		`find_user(name="a")`, `len(find_user(name="a"))`, `[files.read(path="p")]`, `find_user`, `true`, `null`,
		strings.Repeat("[", 70) + strings.Repeat("]", 70), strings.Repeat("(*", 300) + "x" + strings.Repeat(")", 300),
	} {
		text := "<helpers>\norders(user_id=" + expr + ")\n</helpers>"
		_, plain := Parse(text, testTools)
		p, err := sourceText.Parse(text, testTools)
		if err == nil || plain == nil || err.Error() != plain.Error() {
			t.Errorf("%s: with SourceText %v (calls %+v), without %v; want the same refusal", expr, err, p.Calls, plain)
		}
	}
	// Only arguments: an assignment, ** and *args keep their refusals.
	for _, text := range []string{
		"<helpers>\nx = len(\"a\")\norders(user_id=x)\n</helpers>",
		"<helpers>\norders(**{\"user_id\": len(\"a\")})\n</helpers>",
		"<helpers>\norders(**dict(a=1))\n</helpers>",
		"<helpers>\norders(*xs)\n</helpers>",
	} {
		if _, err := sourceText.Parse(text, testTools); err == nil {
			t.Errorf("%q: parsed with SourceText", text)
		}
	}
}

// TestSourceTextPositionalAndExact: a positional argument takes its
// parameter's name in the warning; the text is exact (inner spaces and
// quotes kept), trimmed; names bound earlier work as always.
func TestSourceTextPositionalAndExact(t *testing.T) {
	text := "<helpers>\nu = find_user(name=\"a\")\nfind_user(  u.get( 'zip' ,  'none')  , u[\"zip\"])\n</helpers>"
	p, err := sourceText.Parse(text, testTools)
	if err != nil || p.Program == nil {
		t.Fatalf("%+v %v", p, err)
	}
	want := []string{`line 3: find_user(name=...): the expression u.get( 'zip' ,  'none') is outside the helpers subset; passed as its source text`}
	if !reflect.DeepEqual(p.Warnings, want) || !reflect.DeepEqual(p.Program.Warnings(), want) {
		t.Errorf("warnings %q, want %q", p.Warnings, want)
	}
	h := &fakeHost{}
	run := p.Program.Run(text, h, []Result{{ID: "c1", Tool: "find_user", Output: `{"zip": "10001"}`}})
	if len(run.Calls) != 1 || string(run.Calls[0].Args) != `{"name":"u.get( 'zip' ,  'none')","zip":"10001"}` {
		t.Errorf("run %+v", run)
	}
}

// TestSourceTextStatic: with SourceText, an argument the evaluator refuses
// before any result is in (Check's error without it) is its source text;
// one that waits for a result is left to the run, and an assignment's
// error stays Check's.
func TestSourceTextStatic(t *testing.T) {
	text := "<helpers>\nn = \"x\"\nk = 1\nu = find_user(name=n)\norders(user_id=n[\"a\"])\norders(user_id=k + n, x=u[\"id\"])\norders(user_id=u[\"id\"] + n)\n</helpers>"
	_, prog, err := ParseProgram(text, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if errs := prog.Check(text, &fakeHost{}); len(errs) != 2 || !strings.Contains(errs[0], "line 5") || !strings.Contains(errs[1], "line 6") {
		t.Fatalf("without SourceText, Check = %q", errs)
	}
	_, prog, err = sourceText.ParseProgram(text, testTools)
	if err != nil {
		t.Fatal(err)
	}
	if errs := prog.Check(text, &fakeHost{}); errs != nil {
		t.Fatalf("with SourceText, Check = %q", errs)
	}
	want := []string{
		`line 5: orders(user_id=...): the expression n["a"] is outside the helpers subset; passed as its source text`,
		`line 6: orders(user_id=...): the expression k + n is outside the helpers subset; passed as its source text`,
	}
	if !reflect.DeepEqual(prog.Warnings(), want) {
		t.Errorf("warnings %q\nwant %q", prog.Warnings(), want)
	}
	run := prog.Run(text, &fakeHost{}, []Result{{ID: "c1", Tool: "find_user", Output: `{"id": 7}`}})
	if len(run.Calls) != 2 || string(run.Calls[0].Args) != `{"user_id":"n[\"a\"]"}` || string(run.Calls[1].Args) != `{"user_id":"k + n","x":7}` {
		t.Errorf("run %+v", run)
	}
	// u["id"] + n waits for a result: it runs, and stops there, as always.
	if run = prog.Run(text, &fakeHost{}, []Result{{ID: "c1", Output: `{"id": 7}`}, {ID: "c2"}, {ID: "c3"}}); run.Stop == nil || run.Stop.Line != 7 {
		t.Errorf("the run's stop: %+v", run)
	}
	bad := "<helpers>\nn = \"x\"\nv = n[\"a\"]\norders(user_id=v)\n</helpers>"
	_, prog, _ = sourceText.ParseProgram(bad, testTools)
	if errs := prog.Check(bad, &fakeHost{}); len(errs) != 1 || !strings.Contains(errs[0], "line 3") || prog.Warnings() != nil {
		t.Errorf("an assignment's error: %q, warnings %q", errs, prog.Warnings())
	}
}

// TestSkimReadsPython: the recognizer takes Python's expressions, whole.
func TestSkimReadsPython(t *testing.T) {
	for _, expr := range []string{
		`a[1:2, ::3]`, `a[:]`, `a[b:=1]`, `f"{x:{w}.{p}f}"`, `f"{x!r:>10}"`, `f"{a, b}"`, `f"{x=}"`, `f"{x["k"]}"`, `f"{{}}{x}"`, `rf"\{x}"`,
		`{**a, "b": 1}`, `[*a, *b]`, `(*a,)`, `{*a}`, `await x`, `x is not None`, `not x in y`, `x not in y`, `-x ** 2`, `~x | y & z ^ w`,
		`x << 2 >> 1 // 3 % 4 @ m`, `rb"\d"`, `Rb'\''`, `"""multi` + "\n" + `line""".strip()`, `(x for x in y)`, `print(*args, sep="", **kw)`,
		`a.b.c(d)[e].f`, `{}.keys()`, `().count`, `[] * 2`, `x[...]`, `1e-5 * .5 + 1_000.0e+3`, `0xFF_FF * 0o17 + 0b1`, `"a" "b" f"c{d}"`, `u"x".upper()`,
		`lambda: 0`, `lambda *, k: k`, `lambda a, /, b: a`, `(lambda: (lambda: 1))()`, `[x for x, in y]`, `[x async for x in y]`,
		`[[y for y in x] for x in z if x if not x]`, `x if a else y if b else z`, `{k: v for k, v in d.items() if v}`, `"\N{BULLET}\x41\u0041\U00000041"`,
		"x  # trailing comment\n", `None.__class__`, `True + False`,
	} {
		text := "<helpers>\norders(user_id=" + expr + ")\n</helpers>"
		p, err := sourceText.Parse(text, testTools)
		want := strings.TrimSpace(strings.TrimSuffix(expr, "# trailing comment\n"))
		if err != nil || len(p.Calls) != 1 || p.Calls[0].Arguments != `{"user_id":`+jsonQuoted(want)+`}` {
			t.Errorf("%s: %+v %v", expr, p.Calls, err)
		}
	}
}
