package core

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// literalTurn is what the core requests for a block of literal calls: the
// validated calls of the literal path (the list the helpers format always
// gave), and those of the interpreter run on the same block. They must be
// the same calls, with the same ids, in one batch.
func literalTurn(t interface{ Fatalf(string, ...any) }, text string, tools []Tool) (list, interpreted []ToolCall) {
	cfg := DefaultConfig()
	cfg.Format, cfg.Tools = FormatHelpers, tools
	const step = 7
	parsed, err := parseHelpers(text, tools)
	if err != nil || parsed.program != nil {
		t.Fatalf("a literal block did not parse to calls: %v, program %v\n%s", err, parsed.program != nil, text)
	}
	for i, c := range withIDs(parsed.Calls, step) {
		tc, err := ValidateCall(cfg, c)
		if err != nil {
			return nil, nil // the schema refuses it: no turn either way
		}
		tc.Raw = parsed.raw(i)
		list = append(list, tc)
	}
	_, prog, err := parseHelperProgram(text, tools)
	if err != nil {
		t.Fatalf("parse the program: %v", err)
	}
	run := runProgram(cfg, text, prog, step, nil, nil)
	if run.stop != nil {
		t.Fatalf("the interpreter stopped on a literal block: %+v\n%s", run.stop, text)
	}
	return list, run.calls
}

// The helpers parser as it was before programs (commit 21c0b42) read these
// blocks of literal calls (testdata/helpers_literal_corpus.jsonl, drawn at
// random: keyword, positional and ** arguments, every kind of literal,
// targets, comments, several blocks). Each parses to exactly the calls and
// message it gave then, and the interpreter makes exactly those calls.
func TestHelpersLiteralBlocksGiveTodaysCalls(t *testing.T) {
	f, err := os.Open("testdata/helpers_literal_corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			In    string       `json:"in"`
			Tools []Tool       `json:"tools"`
			Text  string       `json:"text"`
			Calls []NativeCall `json:"calls"`
			Err   string       `json:"err"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Err != "" {
			continue // a reply the old parser refused
		}
		n++
		got, err := Parse(FormatHelpers, ModelReply{Text: c.In}, c.Tools)
		if err != nil || got.program != nil || got.Text != c.Text || !reflect.DeepEqual(got.Calls, c.Calls) {
			t.Fatalf("reply %q\ngot  %q %+v (program %v, err %v)\nwant %q %+v", c.In, got.Text, got.Calls, got.program != nil, err, c.Text, c.Calls)
		}
		if len(c.Calls) == 0 {
			continue
		}
		list, interpreted := literalTurn(t, c.In, c.Tools)
		if !reflect.DeepEqual(list, interpreted) {
			t.Fatalf("reply %q\nlist        %+v\ninterpreted %+v", c.In, list, interpreted)
		}
	}
	if err := sc.Err(); err != nil || n < 150 {
		t.Fatalf("read %d cases: %v", n, err)
	}
}

// genLiteralStatement draws a call statement with literal arguments, in
// keyword, positional and ** styles, and its tool.
func genLiteralStatement(t *rapid.T, i int) (string, Tool) {
	c := genCall(t)
	c.Name = fmt.Sprintf("%s_%d", c.Name, i)
	tool := Tool{Name: c.Name, Parameters: schemaFor(c)}
	members := jsonMembers(c.Arguments)
	npos := rapid.IntRange(0, len(members)).Draw(t, "positional")
	var parts []string
	var unnamed []jsonMember
	for j, m := range members {
		switch {
		case j < npos:
			parts = append(parts, pyLiteral(m.raw))
		case isPyIdentifier(m.key) && rapid.Bool().Draw(t, "keyword"):
			parts = append(parts, m.key+"="+pyLiteral(m.raw))
		default:
			unnamed = append(unnamed, m)
		}
	}
	if len(unnamed) > 0 {
		var b strings.Builder
		b.WriteString("**")
		writePyDict(&b, unnamed)
		parts = append(parts, b.String())
	}
	s := c.Name + "(" + strings.Join(parts, rapid.SampledFrom([]string{", ", ",\n  "}).Draw(t, "sep")) + ")"
	if rapid.Bool().Draw(t, "target") {
		s = rapid.SampledFrom([]string{"x", "user", "r1"}).Draw(t, "name") + " = " + s
	}
	return s, tool
}

// Property: a block of literal calls (any number, any style) gives the
// calls of the list the helpers format always gave, and running it through
// the interpreter gives exactly those calls, ids and raw text included.
func TestPropLiteralBlockInterpretsToTheSameCalls(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var stmts []string
		var tools []Tool
		for i := range rapid.IntRange(1, 5).Draw(t, "statements") {
			s, tool := genLiteralStatement(t, i)
			stmts, tools = append(stmts, s), append(tools, tool)
		}
		text := "Working.\n<helpers>\n" + strings.Join(stmts, rapid.SampledFrom([]string{"\n", "; "}).Draw(t, "end")) + "\n</helpers>"
		list, interpreted := literalTurn(t, text, tools)
		if !reflect.DeepEqual(list, interpreted) {
			t.Fatalf("%s\nlist        %+v\ninterpreted %+v", text, list, interpreted)
		}
	})
}

// progTools are the tools of the generated programs: get (internal, any
// argument), put (external), num (internal, an integer argument its schema
// checks).
var progTools = []Tool{
	{Name: "get", Parameters: json.RawMessage(`{"type":"object","properties":{"k":{}}}`)},
	{Name: "put", Mode: ModeExternal, Parameters: json.RawMessage(`{"type":"object","properties":{"v":{}}}`)},
	{Name: "num", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
}

// genProgramText draws a reply holding a helpers program over progTools: calls
// and assignments whose values use earlier names through subscripts, +,
// f-strings, lists and dicts; mostly valid, sometimes not.
func genProgramText(t *rapid.T) string {
	var names []string
	var stmts []string
	value := func(label string) string {
		lits := []string{`"a"`, `1`, `2.5`, `"id"`, `[1, "x"]`, `{"id": 7}`, `None`, `True`}
		if len(names) == 0 || rapid.IntRange(0, 3).Draw(t, label+"-lit") == 0 {
			return rapid.SampledFrom(lits).Draw(t, label+"-literal")
		}
		n := rapid.SampledFrom(names).Draw(t, label+"-name")
		return rapid.SampledFrom([]string{
			n, n + `["id"]`, n + `["items"][0]`, n + `[-1]`, n + ` + "!"`, n + ` + 1`,
			`f"<{` + n + `}>"`, `f"{` + n + `['name']}"`, `[` + n + `, 2]`, `{"v": ` + n + `}`,
			`"k:" + ` + n + `["name"]`,
		}).Draw(t, label+"-use")
	}
	for i := range rapid.IntRange(1, 6).Draw(t, "statements") {
		name := fmt.Sprintf("v%d", i)
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 0:
			stmts = append(stmts, fmt.Sprintf("%s = get(k=%s)", name, value("get")))
		case 1:
			stmts = append(stmts, fmt.Sprintf("%s = put(v=%s)", name, value("put")))
		case 2:
			stmts = append(stmts, fmt.Sprintf("%s = num(n=%s)", name, value("num")))
		case 3:
			stmts = append(stmts, fmt.Sprintf("get(**%s)", rapid.SampledFrom(append([]string{`{"k": 1}`}, names...)).Draw(t, "spread")))
			continue
		default:
			stmts = append(stmts, fmt.Sprintf("%s = %s", name, value("assign")))
		}
		names = append(names, name)
	}
	return "<helpers>\n" + strings.Join(stmts, "\n") + "\n</helpers>"
}

// genOutput draws a tool's result: JSON (objects with id, name, items;
// numbers; lists), plain text, or an error.
func genOutput(t *rapid.T, id string) ToolResult {
	r := ToolResult{CallID: id}
	switch rapid.IntRange(0, 5).Draw(t, "output-kind") {
	case 0:
		r.Error = "boom"
	case 1:
		r.Output = rapid.SampledFrom([]string{"plain text", "", "  ", "{broken"}).Draw(t, "text")
	case 2:
		r.Output = rapid.SampledFrom([]string{"42", "-0.5", "12345678901234567890", `"s"`, "[1, 2, 3]", "null"}).Draw(t, "scalar")
	default:
		r.Output = fmt.Sprintf(`{"id": %d, "name": %q, "items": [%d, "x"]}`,
			rapid.IntRange(-3, 99).Draw(t, "id"), rapid.SampledFrom([]string{"Ann", "Zoë", ""}).Draw(t, "name"), rapid.IntRange(0, 9).Draw(t, "item"))
	}
	return r
}

// driveProgram runs a helpers agent on one reply (the program), answering
// every call with outputs drawn from t (or taken from outputs when replaying),
// until the model is asked again. With restore it encodes and decodes the
// state at every step, as a crash and a restart would. It returns every
// action's encoding and the final state's, and the outputs it used.
func driveProgram(t *rapid.T, program string, outputs []ToolResult, restore bool) (trace [][]byte, final []byte, used []ToolResult) {
	cfg := DefaultConfig()
	cfg.Format, cfg.Tools = FormatHelpers, progTools
	cfg.Limits.MaxRepeats = 100
	st, err := Start(cfg, Request{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Step(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if st, err = Resume(cfg, a.Next(), ModelReply{Text: program}); err != nil {
		t.Fatalf("Resume(reply): %v", err)
	}
	for i := 0; ; i++ {
		if i > 50 {
			t.Fatalf("the turn did not end: %s", DescribeState(st))
		}
		if restore {
			b, _ := EncodeState(st)
			if st, err = DecodeState(b); err != nil {
				t.Fatalf("the state does not decode: %v\n%s", err, DescribeState(st))
			}
		}
		a, err := Step(cfg, st)
		if err != nil {
			t.Fatalf("Step: %v (%s)", err, DescribeState(st))
		}
		enc, err := EncodeAction(a)
		if err != nil {
			t.Fatal(err)
		}
		trace = append(trace, enc)
		var calls []ToolCall
		switch a := a.(type) {
		case RequestToolCalls:
			calls = a.Calls
		case RequestExternalToolCalls:
			calls = a.Calls
		default:
			final, _ = EncodeState(a.Next())
			return trace, final, used
		}
		var res []ToolResult
		for _, c := range calls {
			var r ToolResult
			if len(outputs) > 0 {
				r, outputs = outputs[0], outputs[1:]
			} else {
				r = genOutput(t, c.ID)
			}
			res, used = append(res, r), append(used, r)
		}
		if st, err = Resume(cfg, a.Next(), ToolResults{Results: res}); err != nil {
			t.Fatalf("Resume refused fitting results: %v (%s)", err, DescribeAction(a))
		}
	}
}

// Properties of interpretation, over generated programs and results:
// it never panics and never refuses fitting results; it is deterministic
// (the same reply and results give the same actions and state, byte for
// byte); and a run checkpointed and restored at every call (encoded,
// decoded, stepped again) gives exactly the uninterrupted run.
func TestPropProgramInterpretation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		program := genProgramText(t)
		trace, final, used := driveProgram(t, program, nil, false)
		again, finalAgain, _ := driveProgram(t, program, used, false)
		restored, finalRestored, _ := driveProgram(t, program, used, true)
		for _, other := range []struct {
			name  string
			trace [][]byte
			final []byte
		}{{"again", again, finalAgain}, {"restored", restored, finalRestored}} {
			if len(other.trace) != len(trace) || !bytes.Equal(other.final, final) {
				t.Fatalf("%s run differs: %d vs %d actions\n%s", other.name, len(other.trace), len(trace), program)
			}
			for i := range trace {
				if !bytes.Equal(trace[i], other.trace[i]) {
					t.Fatalf("%s run differs at action %d\n%s", other.name, i, program)
				}
			}
		}
	})
}

// Property: interpreting any text never panics: whatever a reply holds,
// Resume either makes a turn, a correction or an answer.
func TestPropProgramParseAndRunNeverPanic(t *testing.T) {
	frags := append([]string{"x = ", "get(k=", "put(v=", "x[", "]", `"id"`, " + ", `f"{`, "}", `"`, "v0", "x", "\n", "**", "0", "-1", "[", "{", ":"}, parseFragments...)
	rapid.Check(t, func(t *rapid.T) {
		body := strings.Join(rapid.SliceOfN(rapid.SampledFrom(frags), 0, 30).Draw(t, "fragments"), "")
		text := "<helpers>\nx = get(k=1)\n" + body + "\n</helpers>"
		cfg := DefaultConfig()
		cfg.Format, cfg.Tools = FormatHelpers, progTools
		st, _ := Start(cfg, Request{Input: "go"})
		a, _ := Step(cfg, st)
		st, err := Resume(cfg, a.Next(), ModelReply{Text: text})
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		for range 20 {
			a, err := Step(cfg, st)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			var calls []ToolCall
			switch a := a.(type) {
			case RequestToolCalls:
				calls = a.Calls
			case RequestExternalToolCalls:
				calls = a.Calls
			default:
				return
			}
			res := make([]ToolResult, len(calls))
			for i, c := range calls {
				res[i] = genOutput(t, c.ID)
			}
			if st, err = Resume(cfg, a.Next(), ToolResults{Results: res}); err != nil {
				t.Fatalf("Resume: %v", err)
			}
		}
		t.Fatalf("the turn did not end")
	})
}
