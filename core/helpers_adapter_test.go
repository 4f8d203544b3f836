package core

import (
	"encoding/json"
	"testing"
)

var helperTools = []Tool{
	{Name: "find_user", Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"zip":{"type":"string","default":"10001"}},"required":["name"]}`)},
	// Properties written out of alphabetical order: positional arguments follow the text.
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"filters":{"type":"object"}}}`)},
	{Name: "files.read", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "now"},
}

func hcall(name, args string) NativeCall { return NativeCall{Name: name, Arguments: args} }

func TestParseHelpers(t *testing.T) {
	runParseCases(t, FormatHelpers, helperTools, []parseCase{
		{name: "issue example", in: "<helpers>\nuser = find_user(name=\"Sarah\", zip=\"10001\")\n</helpers>",
			calls: []NativeCall{hcall("find_user", `{"name":"Sarah","zip":"10001"}`)}},
		{name: "positional arguments follow the schema's order", in: `<helpers>search("flights", 3)</helpers>`,
			calls: []NativeCall{hcall("search", `{"query":"flights","limit":3}`)}},
		{name: "positional then keyword", in: `<helpers>find_user("Sarah", zip='10002')</helpers>`,
			calls: []NativeCall{hcall("find_user", `{"name":"Sarah","zip":"10002"}`)}},
		{name: "text around and several statements", in: "I'll look.\n<helpers>\n# find her first\nu = find_user(name=\"Sarah\")  # by name\n\nsearch(query=\"x\"); now()\n</helpers>\nWait.",
			text:  "I'll look.\n\nWait.",
			calls: []NativeCall{hcall("find_user", `{"name":"Sarah"}`), hcall("search", `{"query":"x"}`), hcall("now", `{}`)}},
		{name: "several blocks", in: "<helpers>now()</helpers> and <helpers>\nnow()\n</helpers>", text: "and",
			calls: []NativeCall{hcall("now", `{}`), hcall("now", `{}`)}},
		{name: "call over several lines", in: "<helpers>\nsearch(\n    query=\"x\",  # what\n    limit=2,\n)\n</helpers>",
			calls: []NativeCall{hcall("search", `{"query":"x","limit":2}`)}},
		{name: "ints stay ints", in: `<helpers>f(a=5, b=-3, c=1_000, d=0x1F, e=0o17, g=0b101, h=0, i=-0, j=+7, k=123456789012345678901234567890)</helpers>`,
			calls: []NativeCall{hcall("f", `{"a":5,"b":-3,"c":1000,"d":31,"e":15,"g":5,"h":0,"i":0,"j":7,"k":123456789012345678901234567890}`)}},
		{name: "floats keep a point or exponent", in: `<helpers>f(a=1.5, b=1e3, c=-2.0, d=.5, e=5., f=1_000.25, g=2.5E-3, h=1.e2, i=00.5)</helpers>`,
			calls: []NativeCall{hcall("f", `{"a":1.5,"b":1e3,"c":-2.0,"d":0.5,"e":5.0,"f":1000.25,"g":2.5E-3,"h":100.0,"i":0.5}`)}},
		{name: "constants, lists, dicts, tuples", in: `<helpers>f(a=True, b=False, c=None, d=[1, "x", [2],], e={"k": {"n": None}, 'z': []}, g=(1, 2), h=(1,), i=(), j=("par"))</helpers>`,
			calls: []NativeCall{hcall("f", `{"a":true,"b":false,"c":null,"d":[1,"x",[2]],"e":{"k":{"n":null},"z":[]},"g":[1,2],"h":[1],"i":[],"j":"par"}`)}},
		{name: "string escapes", in: `<helpers>f(a="l1\nl2\tt", b='it\'s', c="q\"q", d="back\\slash", e="\u00e9\U0001F600\x41", f="\d", g="\101", h="\ud83d\ude00")</helpers>`,
			calls: []NativeCall{hcall("f", `{"a":"l1\nl2\tt","b":"it's","c":"q\"q","d":"back\\slash","e":"é😀A","f":"\\d","g":"A","h":"😀"}`)}},
		{name: "triple quotes, raw strings, concatenation", in: "<helpers>f(a=\"\"\"two\nlines \"quoted\" \"\"\", b=r\"C:\\dir\\n\", c='''x''', d=\"ab\" 'cd'\n  \"ef\", e=u\"u\")</helpers>",
			calls: []NativeCall{hcall("f", `{"a":"two\nlines \"quoted\" ","b":"C:\\dir\\n","c":"x","d":"abcdef","e":"u"}`)}},
		{name: "unicode", in: "Voilà\n<helpers>find_user(name=\"Zoë 東京 🎉\", zip=\"75001\")</helpers>", text: "Voilà",
			calls: []NativeCall{hcall("find_user", `{"name":"Zoë 東京 🎉","zip":"75001"}`)}},
		{name: "Python keywords as argument names", in: `<helpers>memory_traverse(from="Ada", **{"class": 1})</helpers>`,
			calls: []NativeCall{hcall("memory_traverse", `{"from":"Ada","class":1}`)}},
		{name: "unicode identifiers", in: "<helpers>f(café=1)</helpers>", calls: []NativeCall{hcall("f", `{"café":1}`)}},
		{name: "closing tag and braces inside strings", in: `<helpers>f(code="x = {'a': 1} </helpers> # not a comment")</helpers>`,
			calls: []NativeCall{hcall("f", `{"code":"x = {'a': 1} </helpers> # not a comment"}`)}},
		{name: "dict unpacking for names that are not identifiers", in: `<helpers>f(a=1, **{"my-key": 2, "class": 3})</helpers>`,
			calls: []NativeCall{hcall("f", `{"a":1,"my-key":2,"class":3}`)}},
		{name: "dotted name", in: `<helpers>files.read("/tmp/x")</helpers>`, calls: []NativeCall{hcall("files.read", `{"path":"/tmp/x"}`)}},
		{name: "unknown function is kept", in: `<helpers>delete_everything(really=True)</helpers>`, calls: []NativeCall{hcall("delete_everything", `{"really":true}`)}},
		{name: "close tag on the call's line, line continuation", in: "<helpers>search(query= \\\n \"x\")</helpers>", calls: []NativeCall{hcall("search", `{"query":"x"}`)}},
		{name: "no block is a final answer", in: "It is 42.", text: "It is 42."},
		{name: "empty block", in: "<helpers>\n</helpers>ok", text: "ok"},
		{name: "values without names are computed", in: `<helpers>f(a=1+2, b="x" + 'y', c=[1, 2][-1], d={"k": [5]}["k"][0], e=f"n={1+1} {True} {None} {[1, {'b': 2, 'a': 1}]} {{x}}", g=0.1+0.2, h=12345678901234567890+1, i=1.50 + 1, j=-2 + 2.0)</helpers>`,
			calls: []NativeCall{hcall("f", `{"a":3,"b":"xy","c":2,"d":5,"e":"n=2 True None [1,{\"a\":1,\"b\":2}] {x}","g":0.3,"h":12345678901234567891,"i":2.5,"j":0.0}`)}},
		{name: "f-strings: raw, triple-quoted, joined, quotes inside fields", in: "<helpers>f(a=rf\"\\d{1}\", b=f'''{\"x\"}\n{'y'}''', c=\"a\" f\"{2}\" 'b', d=f\"{\"k\"}\")</helpers>",
			calls: []NativeCall{hcall("f", `{"a":"\\d1","b":"x\ny","c":"a2b","d":"k"}`)}},

		{name: "undefined name", in: "<helpers>\nsearch(query=user)\n</helpers>",
			err: `user is not defined: assign it in an earlier statement`, line: 2, col: 14},
		{name: "name used before its statement", in: "<helpers>\nsearch(query=u)\nu = find_user(name=\"x\")\n</helpers>",
			err: `u is not defined`, line: 2, col: 14},
		{name: "name used in its own statement", in: "<helpers>u = find_user(name=u)</helpers>", err: `u is not defined`},
		{name: "a tool used as a value", in: "<helpers>search(query=now)</helpers>", err: "now is a tool: call it in a statement of its own"},
		{name: "other operators", in: `<helpers>search(query="a" * 3)</helpers>`, err: "found the operator *: the only operator is +", line: 1, col: 27},
		{name: "comparison", in: `<helpers>search(limit=1 == 1)</helpers>`, err: "found the operator ==", line: 1, col: 25},
		{name: "subtraction", in: "<helpers>\nu = find_user(name=\"x\")\nsearch(limit=u - 1)\n</helpers>", err: "found the operator -", line: 3, col: 16},
		{name: "negated name", in: `<helpers>search(limit=-n)</helpers>`, err: "- must be followed by a number", line: 1, col: 23},
		{name: "nested call of a tool", in: `<helpers>search(query=now())</helpers>`, err: "the call now(...) inside the call to search(...) is not allowed: calls cannot be nested", line: 1, col: 23},
		{name: "call of a function that is not a tool", in: `<helpers>search(query=str(5))</helpers>`, err: "str(...) is not available: a <helpers> block calls only its tools (find_user, search, files.read, now)", line: 1, col: 23},
		{name: "attribute access", in: "<helpers>\nuser = find_user(name=\"x\")\nsearch(query=user.name)\n</helpers>", err: `user.…: attribute access and methods are not supported; read a field with user["key"]`, line: 3, col: 14},
		{name: "method call on a literal", in: `<helpers>search(query="x".upper())</helpers>`, err: "attribute access or a method call on a value is not supported", line: 1, col: 26},
		{name: "slice", in: "<helpers>\nu = find_user(name=\"x\")\nsearch(query=u[1:2])\n</helpers>", err: "slices ([a:b]) are not supported"},
		{name: "constant out of range", in: `<helpers>search(query=[1][3])</helpers>`, err: "the index 3 is out of range: the value has 1 item(s)", line: 1, col: 27},
		{name: "constant type error", in: `<helpers>search(query="a" + 1)</helpers>`, err: "+ joins two strings or adds two numbers; here it has a str and a number", line: 1, col: 27},
		{name: "missing constant key", in: `<helpers>search(query={"a": 1}["b"])</helpers>`, err: `the key "b" is not in the value (its keys: "a")`},
		{name: "conditional", in: `<helpers>search(limit=1 if x else 2)</helpers>`, err: "found if: values are literals, names assigned before"},
		{name: "lambda", in: `<helpers>search(query=lambda: 1)</helpers>`, err: "found the keyword lambda"},
		{name: "f-string conversion", in: `<helpers>search(query=f"{1!r}")</helpers>`, err: "conversions such as {x!r} are not supported"},
		{name: "f-string format spec", in: `<helpers>search(query=f"{1.5:.2f}")</helpers>`, err: "format specs such as {x:.2f} are not supported"},
		{name: "f-string single brace", in: `<helpers>search(query=f"a } b")</helpers>`, err: "a single } in an f-string"},
		{name: "f-string field not closed", in: `<helpers>search(query=f"{1")</helpers>`, err: "expected '}' in the f-string field"},
		{name: "augmented assignment", in: "<helpers>\nu = find_user(name=\"x\")\nu += \"a\"\n</helpers>", err: "augmented assignment (+=) is not supported", line: 3, col: 3},
		{name: "two targets", in: "<helpers>a, b = find_user(name=\"x\")</helpers>", err: "assigning several names at once is not supported"},
		{name: "subscript target", in: "<helpers>\nu = find_user(name=\"x\")\nu[\"a\"] = 1\n</helpers>", err: "only a plain name can be assigned"},
		{name: "assigning a tool's name", in: `<helpers>search = find_user(name="x")</helpers>`, err: "cannot assign to search: it is the name of a tool"},
		{name: "result of a call subscripted in its statement", in: `<helpers>u = find_user(name="x")["id"]</helpers>`, err: `unexpected "[\"id\"]</helpers>" after the call to find_user(...)`},
		{name: "value statement", in: "<helpers>\nu = find_user(name=\"x\")\nu\n</helpers>", err: "expected ( after u"},
		{name: "assignments without a call", in: "<helpers>\nx = 5\n</helpers>", err: "this <helpers> block calls no tool", line: 2, col: 1},
		{name: "operator after an assignment", in: "<helpers>\nx = 5 * 2\nnow()\n</helpers>", err: "found the operator *", line: 2, col: 7},
		{name: "JSON constants", in: `<helpers>search(query=true)</helpers>`, err: "true is not Python; write True"},
		{name: "f-string with an undefined name", in: `<helpers>search(query=f"{x}")</helpers>`, err: "x is not defined"},
		{name: "bytes", in: `<helpers>search(query=b"x")</helpers>`, err: "bytes literals"},
		{name: "complex", in: `<helpers>search(limit=1j)</helpers>`, err: "complex numbers are not supported"},
		{name: "leading zeros", in: `<helpers>search(limit=007)</helpers>`, err: "leading zeros are not allowed in an integer: write 7"},
		{name: "bad underscore", in: `<helpers>search(limit=1__0)</helpers>`, err: "'_' may only stand between digits"},
		{name: "bad number", in: `<helpers>search(limit=12abc)</helpers>`, err: "is not a valid number"},
		{name: "float overflow", in: `<helpers>search(limit=1e999)</helpers>`, err: "out of range for a float"},
		{name: "set", in: `<helpers>search(filters={"a", "b"})</helpers>`, err: "sets are not supported"},
		{name: "non-string dict key", in: `<helpers>search(filters={1: "a"})</helpers>`, err: "dict keys must be strings, found 1", line: 1, col: 26},
		{name: "duplicate dict key", in: `<helpers>search(filters={"a": 1, "a": 2})</helpers>`, err: `the key "a" appears twice in a dict`},
		{name: "too many positional arguments", in: `<helpers>find_user("Sarah", "10001", "x")</helpers>`, err: "find_user takes at most 2 positional argument(s) (name, zip)", line: 1, col: 38},
		{name: "positional for a tool without parameters", in: `<helpers>now(1)</helpers>`, err: "now takes no positional arguments"},
		{name: "positional for an unknown tool", in: `<helpers>nope("x")</helpers>`, err: "nope is not one of the tools (find_user, search, files.read, now)"},
		{name: "positional after keyword", in: `<helpers>find_user(zip="1", "Sarah")</helpers>`, err: "a positional argument cannot follow keyword arguments", line: 1, col: 29},
		{name: "two values for one argument", in: `<helpers>find_user("Sarah", name="Bob")</helpers>`, err: `find_user(...) got two values for the argument "name"`, line: 1, col: 29},
		{name: "duplicate keyword", in: `<helpers>now(a=1, a=2)</helpers>`, err: `got two values for the argument "a"`},
		{name: "missing list element", in: `<helpers>f(a=[1,,2])</helpers>`, err: `expected a value, found ",2])</helpers>"`, line: 1, col: 17},
		{name: "star args", in: `<helpers>now(*[1])</helpers>`, err: "*args unpacking is not supported"},
		{name: "bare name", in: "<helpers>\nfind_user\n</helpers>", err: "expected ( after find_user", line: 2, col: 10},
		{name: "statement keyword", in: "<helpers>\nfor u in users:\n    now()\n</helpers>", err: "not Python statements such as for", line: 2, col: 1},
		{name: "result used in an expression", in: `<helpers>now() + 1</helpers>`, err: "unexpected \"+ 1</helpers>\" after the call to now(...)", line: 1, col: 16},
		{name: "missing comma", in: `<helpers>search(query="x" limit=2)</helpers>`, err: "expected ',' or ')' in the call to search(...), found \"limit=2)</helpers>\"", line: 1, col: 27},
		{name: "call not closed before the end tag", in: `<helpers>search(query="x"</helpers>`, err: "the call to search( is not closed before </helpers>; add )", line: 1, col: 26},
		{name: "unterminated block", in: "Looking.\n<helpers>\nfind_user(name=\"Sarah\")\n", err: "the <helpers> block opened here is not closed", line: 2, col: 1},
		{name: "truncated mid-call", in: "<helpers>\nfind_user(name=\"Sarah\", zip=[\"1\",", err: "the call to find_user( is not closed: the reply ended first (was it cut off?)", line: 2, col: 1},
		{name: "truncated mid-string", in: "<helpers>\nfind_user(name=\"Sar", err: "this string is not closed (was the reply cut off?)", line: 2, col: 16},
		{name: "string broken by a newline", in: "<helpers>\nfind_user(name=\"Sa\nrah\")</helpers>", err: "this string is not closed on its line", line: 2, col: 16},
		{name: "bad escape", in: `<helpers>f(a="\x4")</helpers>`, err: `invalid \x escape: it needs 2 hex digits`, line: 1, col: 15},
		{name: "lone surrogate", in: `<helpers>f(a="\ud83d")</helpers>`, err: `the escape \ud83d is not a valid character`},
		{name: "named escape", in: `<helpers>f(a="\N{BULLET}")</helpers>`, err: `\N{...} escapes are not supported`},
		{name: "too deep", in: "<helpers>f(a=" + repeatString("[", 100) + "</helpers>", err: "nested more than 64 levels deep"},
	})
}

func repeatString(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestRenderHelpersCall(t *testing.T) {
	c := NativeCall{ID: "ignored", Name: "find_user", Arguments: `{"name":"Zoë \"Z\"\n","zip":"10001","n":5,"f":2.0,"ok":true,"none":null,"list":[1,{"a":[]}],"my-key":1,"class":2}`}
	want := "<helpers>\nfind_user(name=\"Zoë \\\"Z\\\"\\n\", zip=\"10001\", n=5, f=2.0, ok=True, none=None, list=[1, {\"a\": []}], **{\"my-key\": 1, \"class\": 2})\n</helpers>"
	if got := RenderCall(FormatHelpers, c); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	got, err := Parse(FormatHelpers, ModelReply{Text: want}, nil)
	if err != nil || len(got.Calls) != 1 || got.Calls[0].Arguments != c.Arguments {
		t.Fatalf("parse back: %+v, %v", got, err)
	}
}
