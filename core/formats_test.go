package core_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/core/coretest"
	"pgregory.net/rapid"
)

// lineFormat is the example of a custom format: a call is a line
//
//	CALL search {"query": "x"}
//
// anywhere in the reply; every other line is the message. It is pure: it
// reads only its input.
var lineFormat = core.FormatSpec{
	Parse: func(text string, tools []core.Tool) (core.Parsed, error) {
		var p core.Parsed
		var msg []string
		offset := 0
		for i, line := range strings.Split(text, "\n") {
			rest, ok := strings.CutPrefix(line, "CALL ")
			if !ok {
				msg = append(msg, line)
				offset += len(line) + 1
				continue
			}
			name, args, _ := strings.Cut(rest, " ")
			if args = strings.TrimSpace(args); args == "" {
				args = "{}"
			}
			if !strings.HasPrefix(args, "{") || !json.Valid([]byte(args)) {
				return core.Parsed{}, &core.ParseError{Offset: offset, Line: i + 1, Col: 6 + len(name) + 1, Msg: "the arguments must be one JSON object on the CALL line"}
			}
			if name == "" {
				return core.Parsed{}, errors.New("a CALL line names no tool")
			}
			p.Calls = append(p.Calls, core.NativeCall{Name: name, Arguments: args})
			offset += len(line) + 1
		}
		p.Text = strings.TrimSpace(strings.Join(msg, "\n"))
		return p, nil
	},
	RenderCall: func(c core.NativeCall) string {
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		return "CALL " + c.Name + " " + args
	},
}

// lineFormatOwn is lineFormat with its own docs and result rendering.
var lineFormatOwn = core.FormatSpec{
	Parse:      lineFormat.Parse,
	RenderCall: lineFormat.RenderCall,
	Docs: func(tools []core.Tool) string {
		var b strings.Builder
		b.WriteString("Write CALL NAME {args} on a line of its own.\n")
		for _, t := range tools {
			b.WriteString("\n" + t.Name + "\n" + core.ToolParamDocs(t))
		}
		return b.String()
	},
	RenderResults: func(calls []core.ToolCall, results []core.ToolResult) string {
		var b strings.Builder
		for i, c := range calls {
			if results[i].Failed() {
				fmt.Fprintf(&b, "ERROR %s %s\n", c.Name, results[i].Error)
			} else {
				fmt.Fprintf(&b, "RESULT %s %s\n", c.Name, results[i].Output)
			}
		}
		return b.String()
	},
}

// lineFormats is a program's format table: the built-in formats and its
// own two.
var lineFormats = func() *core.Formats {
	var fs *core.Formats
	for _, name := range []core.Format{"lines", "lines-own"} {
		f := lineFormat
		if name == "lines-own" {
			f = lineFormatOwn
		}
		var err error
		if fs, err = fs.With(name, f); err != nil {
			panic(err)
		}
	}
	return fs
}()

var addTool = core.Tool{Name: "add", Description: "Add two integers.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}

// plainLinesConfig is an agent in format f, not compiled.
func plainLinesConfig(f core.Format) core.Config {
	cfg := core.DefaultConfig()
	cfg.Format = f
	cfg.SystemPrompt = "You add."
	cfg.Tools = []core.Tool{addTool}
	return cfg
}

// linesConfig is an agent in format f, compiled with lineFormats.
func linesConfig(t testing.TB, f core.Format) core.Config {
	t.Helper()
	cfg, err := core.Compile(plainLinesConfig(f), lineFormats)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestFormatsWithRefuses(t *testing.T) {
	for _, tc := range []struct {
		name core.Format
		f    core.FormatSpec
		want string
	}{
		{"", lineFormat, `"": a name is 1-64 letters`},
		{"has space", lineFormat, "a name is 1-64 letters"},
		{"fenced", lineFormat, `"fenced": it is a built-in format`},
		{"lines", lineFormat, `"lines": it is already registered`},
		{"no-parse", core.FormatSpec{RenderCall: lineFormat.RenderCall}, "Parse is nil"},
		{"no-render", core.FormatSpec{Parse: lineFormat.Parse}, "RenderCall is nil"},
	} {
		fs, err := lineFormats.With(tc.name, tc.f)
		if !errors.Is(err, core.ErrFormatRegistration) || !strings.Contains(err.Error(), tc.want) || fs != lineFormats {
			t.Errorf("With(%q): %v, want %q and the table unchanged", tc.name, err, tc.want)
		}
	}
	if got := fmt.Sprint(lineFormats.Added()); got != "[lines lines-own]" {
		t.Errorf("Added() = %s", got)
	}
	if got := fmt.Sprint(lineFormats.Names()); got != "[native xml json fenced strict helpers auto lines lines-own]" {
		t.Errorf("Names() = %s", got)
	}
}

// With returns a new table and leaves the one it extends as it was: no
// table a config was compiled with ever changes.
func TestFormatsWithLeavesTheTable(t *testing.T) {
	more, err := lineFormats.With("lines-2", lineFormat)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(lineFormats.Added(), more.Added()); got != "[lines lines-own] [lines lines-2 lines-own]" {
		t.Errorf("tables: %s", got)
	}
	var none *core.Formats
	if _, ok := none.Lookup("lines"); ok || none.Added() != nil {
		t.Error("the nil table has an added format")
	}
	if f, ok := none.Lookup(""); !ok || f.RenderCall(core.NativeCall{ID: "a", Name: "x", Arguments: "{}"}) != `{"id": "a", "name": "x", "arguments": "{}"}` {
		t.Error(`"" is not the native format`)
	}
}

// A config names its format; a config that is not compiled with a table
// holding it is refused at Validate, Compile and Start (and so at replay),
// naming the format, with the same text as before the table existed.
func TestUnknownFormatFailsClearly(t *testing.T) {
	plain := plainLinesConfig("lines")
	want := `format "lines" is not one of native, xml, json, fenced, strict, helpers, auto`
	if err := plain.Validate(); !errors.Is(err, core.ErrInvalidConfig) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Validate: %v", err)
	}
	if _, err := core.Start(plain, core.Request{Input: "x"}); !errors.Is(err, core.ErrInvalidConfig) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Start: %v", err)
	}
	if _, err := core.Compile(plain, nil); !errors.Is(err, core.ErrInvalidConfig) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Compile: %v", err)
	}
	want = `format "yaml-calls" is not one of native, xml, json, fenced, strict, helpers, auto or the registered formats lines, lines-own`
	if _, err := core.Compile(plainLinesConfig("yaml-calls"), lineFormats); !errors.Is(err, core.ErrInvalidConfig) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Compile with a table: %v", err)
	}
	// A compiled config whose format is changed afterwards is checked
	// against its table again.
	cfg := linesConfig(t, "lines")
	cfg.Format = "yaml-calls"
	if _, err := core.Start(cfg, core.Request{Input: "x"}); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Start after a change: %v", err)
	}
	cfg.Format = "lines-own"
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate after a change to another format of the table: %v", err)
	}
}

func TestCustomFormatRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, _ := json.Marshal(rapid.String().Draw(t, "s")) // any text: newlines are escaped
		c := core.NativeCall{
			Name:      rapid.StringMatching(`[a-z_]{1,10}`).Draw(t, "name"),
			Arguments: fmt.Sprintf(`{"a":%d,"s":%s}`, rapid.Int().Draw(t, "a"), s),
		}
		reply := lineFormats.RenderCall("lines", c)
		p, err := lineFormats.Parse("lines", core.ModelReply{Text: reply}, nil)
		if err != nil || len(p.Calls) != 1 || p.Calls[0] != c {
			t.Fatalf("%q parses to %+v, %v", reply, p, err)
		}
	})
}

func TestCustomFormatParseErrors(t *testing.T) {
	_, err := lineFormats.Parse("lines", core.ModelReply{Text: "Sure.\nCALL add [1,2]"}, nil)
	var pe *core.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, core.ErrParse) || err.Error() != "lines format, line 2 column 10: the arguments must be one JSON object on the CALL line" {
		t.Errorf("ParseError: %v", err)
	}
	_, err = lineFormats.Parse("lines", core.ModelReply{Text: "CALL  {}"}, nil)
	if !errors.Is(err, core.ErrParse) || err.Error() != "lines format: a CALL line names no tool" {
		t.Errorf("plain error: %v", err)
	}
}

// TestCustomFormatRun drives a run in each added format: its docs in
// the system prompt, its calls parsed and validated, its results rendered,
// its mistakes corrected.
func TestCustomFormatRun(t *testing.T) {
	for _, tc := range []struct {
		f               core.Format
		docs, resultMsg string
	}{
		{"lines", "To use a tool, write a call like this:\n\nCALL add {\"a\":1,\"b\":1}\n", "Result of add (call call_1_1):\n42\n"},
		{"lines-own", "Write CALL NAME {args} on a line of its own.\n\nadd\nParameters:\n  - a (integer, required)\n", "RESULT add 42\n"},
	} {
		t.Run(string(tc.f), func(t *testing.T) {
			cfg := linesConfig(t, tc.f)
			st, err := core.Start(cfg, core.Request{Input: "2+40?"})
			if err != nil {
				t.Fatal(err)
			}
			if sys := st.Messages[0].Content; !strings.HasPrefix(sys, "You add.\n\n") || !strings.Contains(sys, tc.docs) {
				t.Errorf("system prompt:\n%s\nwant it to hold %q", sys, tc.docs)
			}
			step := func(res core.Result) core.Action {
				t.Helper()
				a, err := core.Step(cfg, st)
				if err != nil {
					t.Fatal(err)
				}
				if st, err = core.Resume(cfg, a.Next(), res); err != nil {
					t.Fatal(err)
				}
				return a
			}
			step(core.ModelReply{Text: "CALL add {\"a\":2}"})
			if got := st.Messages[len(st.Messages)-1].Content; !strings.Contains(got, `missing required argument "b"`) {
				t.Errorf("correction: %q", got)
			}
			step(core.ModelReply{Text: "Adding.\nCALL add {\"a\":2,\"b\":40}"})
			a, err := core.Step(cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			calls, ok := a.(core.RequestToolCalls)
			if !ok || len(calls.Calls) != 1 || string(calls.Calls[0].Args) != `{"a":2,"b":40}` {
				t.Fatalf("action: %s", core.DescribeAction(a))
			}
			if st, err = core.Resume(cfg, a.Next(), core.ToolResults{Results: []core.ToolResult{{CallID: calls.Calls[0].ID, Output: "42"}}}); err != nil {
				t.Fatal(err)
			}
			if got := st.Messages[len(st.Messages)-1].Content; got != strings.ReplaceAll(tc.resultMsg, "call_1_1", calls.Calls[0].ID) {
				t.Errorf("results message %q, want %q", got, tc.resultMsg)
			}
			step(core.ModelReply{Text: "42"})
			a, err = core.Step(cfg, st)
			if done, ok := a.(core.Complete); err != nil || !ok || done.Answer != "42" || fmt.Sprint(done.ToolsUsed) != "[add]" {
				t.Errorf("end: %s, %v", core.DescribeAction(a), err)
			}
		})
	}
}

// TestCustomFormatCoretest: the coretest properties hold for an agent in an
// added format, as for the built-ins, and its runs replay.
func TestCustomFormatCoretest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.ConfigsWith(lineFormats, "lines", "lines-own").Draw(t, "config")
		final, fed := coretest.CheckRun(t, cfg, "go")
		a, err := coretest.Replay(cfg, "go", fed)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if got, want := core.DescribeState(a[len(a)-1].Next()), core.DescribeState(final); got != want {
			t.Fatalf("replay ended in %s, the run in %s", got, want)
		}
	})
}
