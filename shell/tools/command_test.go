package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustCommand(t *testing.T, spec CommandSpec) *command {
	t.Helper()
	tool, err := Command(spec)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	return tool.(*command)
}

const twoArgs = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`

func TestCommandArgumentsAreLiteral(t *testing.T) {
	t.Parallel()
	needProgram(t, "printf")
	tool := mustCommand(t, CommandSpec{Name: "show", Parameters: json.RawMessage(twoArgs),
		Argv: []string{"printf", "[%s]\\n", "{{a}}", "x{{ b }}y", "{{a}}{{b}}"}})
	for _, tc := range []struct{ a, b, want string }{
		{"$(rm -rf /)", "; echo pwned", "[$(rm -rf /)]\n[x; echo pwnedy]\n[$(rm -rf /); echo pwned]\n"},
		{"a b  'c' \"d\"", "`id` && true", "[a b  'c' \"d\"]\n[x`id` && truey]\n[a b  'c' \"d\"`id` && true]\n"},
		{"*", "$HOME|>out", "[*]\n[x$HOME|>outy]\n[*$HOME|>out]\n"},
		{"", "", "[]\n[xy]\n[]\n"},
	} {
		args, _ := json.Marshal(map[string]string{"a": tc.a, "b": tc.b})
		res := run(t, tool, string(args))
		if res.Output != tc.want || res.Error != "" {
			t.Errorf("%s: got %q (error %q), want %q", args, res.Output, res.Error, tc.want)
		}
	}
	// b absent: its placeholder expands to nothing.
	if res := run(t, tool, `{"a":"only"}`); res.Output != "[only]\n[xy]\n[only]\n" {
		t.Errorf("absent b: %q %q", res.Output, res.Error)
	}
	if _, err := os.Stat("out"); err == nil {
		t.Error("a redirection in an argument created a file")
	}
}

func TestCommandNoWordSplitting(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	// The shell here is the program; the argument reaches it as $1, one word.
	tool := mustCommand(t, CommandSpec{Name: "count", Parameters: json.RawMessage(twoArgs),
		Argv: []string{"bash", "-c", `echo "$# [$1]"`, "_", "{{a}}"}})
	res := run(t, tool, `{"a":"one two   three; echo pwned $(echo x)"}`)
	if want := "1 [one two   three; echo pwned $(echo x)]\n"; res.Output != want {
		t.Errorf("got %q (error %q), want %q", res.Output, res.Error, want)
	}
}

func TestCommandValueForms(t *testing.T) {
	t.Parallel()
	needProgram(t, "printf")
	params := `{"type":"object","properties":{"n":{"type":"integer"},"f":{"type":"number"},"ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}},"o":{"type":"object"}},"additionalProperties":false}`
	tool := mustCommand(t, CommandSpec{Name: "forms", Parameters: json.RawMessage(params),
		Argv: []string{"printf", "%s|", "{{n}}", "{{f}}", "{{ok}}", "{{tags}}", "{{o}}"}})
	res := run(t, tool, `{"n":12345678901234567890,"f":1.5,"ok":true,"tags":["a","b c"],"o":{"z":1,"a":[true]}}`)
	if want := `12345678901234567890|1.5|true|["a","b c"]|{"a":[true],"z":1}|`; res.Output != want {
		t.Errorf("got %q (error %q), want %q", res.Output, res.Error, want)
	}
}

func TestCommandStdinDirEnvContext(t *testing.T) {
	needProgram(t, "bash")
	t.Setenv("STEPWISE_TOOLS_SECRET", "hunter2")
	t.Setenv("STEPWISE_TOOLS_PASS", "passed")
	dir := t.TempDir()
	script := `cat; echo; pwd; echo "[$STEPWISE_TOOLS_SECRET][$STEPWISE_TOOLS_PASS][$STEPWISE_RUN_ID][$STEPWISE_STEP][$STEPWISE_AGENT]"`
	spec := CommandSpec{Name: "ctx", Parameters: json.RawMessage(twoArgs), Argv: []string{"bash", "-c", script},
		Stdin: "hello {{a}}", Dir: dir, Env: []string{"STEPWISE_TOOLS_PASS"}, PassContext: true}
	res := run(t, mustCommand(t, spec), `{"a":"$(world)"}`)
	if want := "hello $(world)\n" + dir + "\n[][passed][run-1][3][tester]\n"; res.Output != want {
		t.Errorf("got %q (error %q), want %q", res.Output, res.Error, want)
	}
	spec.PassContext = false
	res = run(t, mustCommand(t, spec), `{"a":"x"}`)
	wantOutput(t, res, "[][passed][][][]")
}

func TestCommandFailures(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	fail := mustCommand(t, CommandSpec{Name: "fail", Argv: []string{"bash", "-c", `echo some output; head -c 5000 /dev/zero | tr '\0' e >&2; echo the real reason >&2; exit 3`}})
	res := run(t, fail, `{}`)
	wantError(t, res, "fail: bash exited with status 3:", "the real reason")
	if len(res.Error) > 2200 {
		t.Errorf("error not cut to a tail: %d bytes", len(res.Error))
	}
	quiet := mustCommand(t, CommandSpec{Name: "quiet", Argv: []string{"bash", "-c", `echo only stdout; exit 1`}})
	wantError(t, run(t, quiet, `{}`), "exited with status 1:\nonly stdout")

	pidFile := filepath.Join(t.TempDir(), "pid")
	slow := mustCommand(t, CommandSpec{Name: "slow", Timeout: 2 * time.Second, // time to write the pid, even on a loaded machine
		Argv: []string{"bash", "-c", `sleep 30 & echo pid=$! > "$1"; wait`, "_", pidFile}})
	start := time.Now()
	wantError(t, run(t, slow, `{}`), "timed out after 2s; it and every process it started were killed")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pidIn(t, string(b)))

	wantError(t, run(t, mustCommand(t, CommandSpec{Name: "nope", Argv: []string{"stepwise-no-such-program"}}), `{}`), "is not available")
	wantError(t, run(t, mustCommand(t, CommandSpec{Name: "nope2", Argv: []string{"./missing.sh"}, Dir: t.TempDir()}), `{}`), "cannot run ./missing.sh")
	wantError(t, runRaw(fail, `{"a":`), "bad arguments")
}

func TestCommandOutput(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	tool := mustCommand(t, CommandSpec{Name: "big", MaxOutput: 10, Argv: []string{"bash", "-c", `echo 0123456789abcdef; echo warning >&2`}, Idempotent: true})
	wantOutput(t, run(t, tool, `{}`), "0123456789\n[... 7 more bytes cut: the limit is 10 bytes]")
	if !tool.Spec().Idempotent {
		t.Error("Idempotent not carried to the spec")
	}
	silent := mustCommand(t, CommandSpec{Name: "silent", Argv: []string{"true"}})
	if res := run(t, silent, `{}`); res.Output != "(no output)" {
		t.Errorf("silent: %q %q", res.Output, res.Error)
	}
	if string(silent.Spec().Parameters) != `{"additionalProperties":false,"properties":{},"type":"object"}` {
		t.Errorf("default parameters %s", silent.Spec().Parameters)
	}
}

func TestCommandValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec CommandSpec
		err  string
	}{
		{"empty argv", CommandSpec{Name: "x"}, "argv is empty"},
		{"empty program", CommandSpec{Name: "x", Argv: []string{""}}, "argv is empty"},
		{"bad name", CommandSpec{Name: "has space", Argv: []string{"true"}}, "the name must be"},
		{"no name", CommandSpec{Argv: []string{"true"}}, "the name must be"},
		{"placeholder program", CommandSpec{Name: "x", Argv: []string{"{{a}}"}, Parameters: json.RawMessage(twoArgs)}, "may not hold a placeholder"},
		{"unknown placeholder", CommandSpec{Name: "x", Argv: []string{"echo", "{{c}}"}, Parameters: json.RawMessage(twoArgs)}, "placeholder {{c}} names no property of the parameters (they are: a, b)"},
		{"unknown in stdin", CommandSpec{Name: "x", Argv: []string{"cat"}, Stdin: "{{zz}}"}, "placeholder {{zz}}"},
		{"unclosed", CommandSpec{Name: "x", Argv: []string{"echo", "{{a"}, Parameters: json.RawMessage(twoArgs)}, "unclosed {{"},
		{"empty placeholder", CommandSpec{Name: "x", Argv: []string{"echo", "{{ }}"}}, "needs an argument name"},
		{"not an object schema", CommandSpec{Name: "x", Argv: []string{"echo"}, Parameters: json.RawMessage(`{"type":"string"}`)}, `type must be "object"`},
		{"bad json", CommandSpec{Name: "x", Argv: []string{"echo"}, Parameters: json.RawMessage(`{`)}, "not a JSON object"},
		{"bad env", CommandSpec{Name: "x", Argv: []string{"echo"}, Env: []string{"A B"}}, "env entry"},
		{"negative timeout", CommandSpec{Name: "x", Argv: []string{"echo"}, Timeout: -1}, "must not be negative"},
	} {
		_, err := Command(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want argTemplate
	}{
		{"", nil},
		{"plain", argTemplate{{text: "plain"}}},
		{"{{a}}", argTemplate{{arg: "a"}}},
		{"--x={{ a }}!", argTemplate{{text: "--x="}, {arg: "a"}, {text: "!"}}},
		{"}}{{a}}{{b}}", argTemplate{{text: "}}"}, {arg: "a"}, {arg: "b"}}},
		{"{ {a} }", argTemplate{{text: "{ {a} }"}}},
	} {
		got, err := parseTemplate(tc.in)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
			}
		}
	}
	for _, bad := range []string{"{{", "a{{b", "{{}}", "{{{a}}}", "{{a}"} {
		if _, err := parseTemplate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "x", "{{a}}", "a{{ b }}c{{d}}", "{{", "}}{{x}}{{", "{{{}}}"} {
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, s, val string) {
		tmpl, err := parseTemplate(s)
		if err != nil {
			return
		}
		args := map[string]any{}
		var lits strings.Builder
		for _, seg := range tmpl {
			if seg.arg != "" {
				if strings.ContainsAny(seg.arg, "{}") || strings.TrimSpace(seg.arg) != seg.arg {
					t.Fatalf("%q: bad name %q", s, seg.arg)
				}
				args[seg.arg] = val
			} else {
				lits.WriteString(seg.text)
			}
		}
		// Without arguments only the literals remain; an argument is
		// inserted verbatim, never parsed again.
		if got := tmpl.expand(nil); got != lits.String() {
			t.Fatalf("%q: expand(nil) = %q, want %q", s, got, lits.String())
		}
		if got, want := len(tmpl.expand(args)), lits.Len()+len(val)*len(tmpl.args()); got != want {
			t.Fatalf("%q: expanded length %d, want %d", s, got, want)
		}
	})
}
