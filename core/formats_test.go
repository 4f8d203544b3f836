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
var lineFormat = core.CustomFormat{
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
var lineFormatOwn = core.CustomFormat{
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

// A user's package registers its formats at init, before any config is
// validated.
func init() {
	for name, f := range map[core.Format]core.CustomFormat{"lines": lineFormat, "lines-own": lineFormatOwn} {
		if err := core.RegisterFormat(name, f); err != nil {
			panic(err)
		}
	}
}

var addTool = core.Tool{Name: "add", Description: "Add two integers.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}

func linesConfig(f core.Format) core.Config {
	cfg := core.DefaultConfig()
	cfg.Format = f
	cfg.SystemPrompt = "You add."
	cfg.Tools = []core.Tool{addTool}
	return cfg
}

func TestRegisterFormatRefuses(t *testing.T) {
	for _, tc := range []struct {
		name core.Format
		f    core.CustomFormat
		want string
	}{
		{"", lineFormat, `"": a name is 1-64 letters`},
		{"has space", lineFormat, "a name is 1-64 letters"},
		{"fenced", lineFormat, `"fenced": it is a built-in format`},
		{"lines", lineFormat, `"lines": it is already registered`},
		{"no-parse", core.CustomFormat{RenderCall: lineFormat.RenderCall}, "Parse is nil"},
		{"no-render", core.CustomFormat{Parse: lineFormat.Parse}, "RenderCall is nil"},
	} {
		err := core.RegisterFormat(tc.name, tc.f)
		if !errors.Is(err, core.ErrFormatRegistration) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RegisterFormat(%q): %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := fmt.Sprint(core.RegisteredFormats()); got != "[lines lines-own]" {
		t.Errorf("RegisteredFormats() = %s", got)
	}
}

// A config names its format; a program that has not registered it refuses
// the config at Validate and Start (and so at replay), naming the format.
func TestUnregisteredFormatFailsClearly(t *testing.T) {
	cfg := linesConfig("yaml-calls")
	want := `format "yaml-calls" is not one of native, xml, json, fenced, strict, helpers, auto or the registered formats lines, lines-own`
	if err := cfg.Validate(); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate: %v", err)
	}
	if _, err := core.Start(cfg, core.Request{Input: "x"}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Start: %v", err)
	}
}

func TestCustomFormatRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, _ := json.Marshal(rapid.String().Draw(t, "s")) // any text: newlines are escaped
		c := core.NativeCall{
			Name:      rapid.StringMatching(`[a-z_]{1,10}`).Draw(t, "name"),
			Arguments: fmt.Sprintf(`{"a":%d,"s":%s}`, rapid.Int().Draw(t, "a"), s),
		}
		reply := core.RenderCall("lines", c)
		p, err := core.Parse("lines", core.ModelReply{Text: reply}, nil)
		if err != nil || len(p.Calls) != 1 || p.Calls[0] != c {
			t.Fatalf("%q parses to %+v, %v", reply, p, err)
		}
	})
}

func TestCustomFormatParseErrors(t *testing.T) {
	_, err := core.Parse("lines", core.ModelReply{Text: "Sure.\nCALL add [1,2]"}, nil)
	var pe *core.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, core.ErrParse) || err.Error() != "lines format, line 2 column 10: the arguments must be one JSON object on the CALL line" {
		t.Errorf("ParseError: %v", err)
	}
	_, err = core.Parse("lines", core.ModelReply{Text: "CALL  {}"}, nil)
	if !errors.Is(err, core.ErrParse) || err.Error() != "lines format: a CALL line names no tool" {
		t.Errorf("plain error: %v", err)
	}
}

// TestCustomFormatRun drives a run in each registered format: its docs in
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
			cfg := linesConfig(tc.f)
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

// TestCustomFormatCoretest: the coretest properties hold for an agent in a
// registered format, as for the built-ins, and its runs replay.
func TestCustomFormatCoretest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := coretest.Configs("lines", "lines-own").Draw(t, "config")
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
