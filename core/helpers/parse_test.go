package helpers

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var testTools = []Tool{
	{Name: "find_user", Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"zip":{"type":"string"}}}`)},
	{Name: "orders", Parameters: json.RawMessage(`{"properties":{"user_id":{}}}`)},
	{Name: "files.read", Parameters: json.RawMessage(`{"properties":{"path":{}}}`)},
}

func TestParseLiteralCalls(t *testing.T) {
	for _, tc := range []struct {
		name, text, msg string
		calls           []Call
		raw             []string
	}{
		{"keyword", "Looking.\n<helpers>\nfind_user(name=\"Sarah\", zip='10001')\n</helpers>", "Looking.",
			[]Call{{"find_user", `{"name":"Sarah","zip":"10001"}`}}, []string{`find_user(name="Sarah", zip='10001')`}},
		{"positional follow Params", `<helpers>find_user("Sarah", "10001")</helpers>`, "",
			[]Call{{"find_user", `{"name":"Sarah","zip":"10001"}`}}, []string{`find_user("Sarah", "10001")`}},
		{"constants folded", `<helpers>orders(user_id=1 + 2); files.read(path=f"/a/{'b'}")</helpers> done`, "done",
			[]Call{{"orders", `{"user_id":3}`}, {"files.read", `{"path":"/a/b"}`}}, []string{"orders(user_id=1 + 2)", `files.read(path=f"/a/{'b'}")`}},
		{"literals", `<helpers>orders(user_id=[True, None, 0x10, 1.50, (1, 2), {"k": r"\d"}], **{"x": 1})</helpers>`, "",
			[]Call{{"orders", `{"user_id":[true,null,16,1.50,[1,2],{"k":"\\d"}],"x":1}`}}, []string{`orders(user_id=[True, None, 0x10, 1.50, (1, 2), {"k": r"\d"}], **{"x": 1})`}},
		{"a target on a literal call is ignored", "<helpers>\nu = find_user(name=\"a\")\n</helpers>", "",
			[]Call{{"find_user", `{"name":"a"}`}}, []string{`u = find_user(name="a")`}},
		{"no block", "just an answer", "just an answer", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.text, testTools)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if p.Program != nil || p.Text != tc.msg || !reflect.DeepEqual(p.Calls, tc.calls) || !reflect.DeepEqual(p.Raw, tc.raw) {
				t.Errorf("Parse =\n %+v (program %v)\nwant text %q calls %+v raw %q", p, p.Program != nil, tc.msg, tc.calls, tc.raw)
			}
		})
	}
}

func TestParseProgram(t *testing.T) {
	text := "<helpers>\nu = find_user(name=\"Sarah\")\norders(user_id=u[\"id\"])\n</helpers>"
	p, err := Parse(text, testTools)
	if err != nil || p.Program == nil || p.Calls != nil {
		t.Fatalf("Parse = %+v, %v; want a program", p, err)
	}
	if n := p.Program.Calls(); n != 2 {
		t.Errorf("Calls() = %d, want 2", n)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"<helpers>\nfind_user(name=\"a\"", 2, 1, "the call to find_user( is not closed: the reply ended first"},
		{"<helpers>\nx = 1\n</helpers>", 2, 1, "this <helpers> block calls no tool"},
		{"<helpers>\norders(user_id=v)\n</helpers>", 2, 16, "v is not defined"},
		{"<helpers>\nnope(1)\n</helpers>", 2, 6, "nope is not one of the tools (find_user, orders, files.read)"},
		{"<helpers>\norders(1, 2)\n</helpers>", 2, 11, "orders takes at most 1 positional argument(s) (user_id)"},
		{"<helpers>\nfor x in y: orders()\n</helpers>", 2, 1, "not Python statements such as for"},
		{"<helpers>\norders(user_id=find_user(name=\"a\"))\n</helpers>", 2, 16, "calls cannot be nested"},
		{"ok\n<helpers>\n  orders(user_id=true)\n</helpers>", 3, 18, "true is not Python; write True"},
		{"<helpers>\norders(user_id=\"é\" + 1)\n</helpers>", 2, 20, "+ joins two strings or adds two numbers"},
	} {
		_, err := Parse(tc.text, testTools)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: %v, want an *Error", tc.text, err)
			continue
		}
		if e.Line != tc.line || e.Col != tc.col || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q:\n got line %d col %d: %s\nwant line %d col %d: ...%s...", tc.text, e.Line, e.Col, e.Msg, tc.line, tc.col, tc.msg)
		}
		if want := "line "; !strings.HasPrefix(e.Error(), want) || !strings.HasSuffix(e.Error(), e.Msg) {
			t.Errorf("Error() = %q", e.Error())
		}
	}
}

func TestIdentifiersAndKeywords(t *testing.T) {
	for s, want := range map[string]bool{"name": true, "_x1": true, "naïve": true, "from": false, "1a": false, "": false, "a-b": false} {
		if got := IsIdentifier(s); got != want {
			t.Errorf("IsIdentifier(%q) = %t", s, got)
		}
	}
	for s, want := range map[string]bool{"from": true, "None": true, "lambda": true, "name": false, "none": false} {
		if got := IsKeyword(s); got != want {
			t.Errorf("IsKeyword(%q) = %t", s, got)
		}
	}
}

func TestParamOrderFollowsSchemaText(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   []string
	}{
		{`{"required":["b"],"properties":{"zeta":{},"alpha":{"properties":{"inner":{}}},"mid":{}},"type":"object"}`, []string{"zeta", "alpha", "mid"}},
		{`{"properties":"x","type":"object"}`, nil},
		{`{"properties":[],"properties":{"a":{},"b":{},"a":{}}}`, []string{"a", "b", "a"}},
		{` { "properties" : { "na\u006de" : {} } } `, []string{"name"}},
		{`{"properties":{}}`, nil},
		{`not json`, nil},
		{`[{"properties":{"a":{}}}]`, nil},
		{``, nil},
	} {
		if got := ParamOrder(json.RawMessage(tc.schema)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParamOrder(%s) = %q, want %q", tc.schema, got, tc.want)
		}
	}
}
