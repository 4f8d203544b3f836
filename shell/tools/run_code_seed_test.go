package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunCodeLanguageAliases: python, javascript and bash (the names the
// seed designs use) pass the core's check and run their interpreter,
// whether the options name the languages by the old names or the new.
func TestRunCodeLanguageAliases(t *testing.T) {
	t.Parallel()
	for _, opts := range []RunCodeOptions{{}, {Languages: []string{"python", "javascript", "bash"}}} {
		tool := RunCode(opts)
		for _, tc := range []struct{ lang, program, code string }{
			{"python", "python3", "import sys; print('hi from', sys.version_info[0])"},
			{"javascript", "node", "console.log('hi from', typeof process)"},
			{"bash", "bash", "echo hi from $BASH_VERSINFO"},
		} {
			needProgram(t, tc.program)
			args, _ := json.Marshal(map[string]string{"language": tc.lang, "code": tc.code})
			res := run(t, tool, string(args))
			wantOutput(t, res, "exit_code: 0\n--- stdout ---\nhi from ")
		}
	}
	// Aliases in the options are the same languages: listed once each.
	spec := RunCode(RunCodeOptions{Languages: []string{"python", "python3"}}).Spec()
	if !strings.Contains(string(spec.Parameters), `"enum":["python3","python"]`) || !strings.Contains(spec.Description, "python3 (or python)") {
		t.Fatalf("schema %s\ndescription %s", spec.Parameters, spec.Description)
	}
	if _, err := checkCall(RunCode(RunCodeOptions{Languages: []string{"bash"}}), `{"language":"python","code":"print(1)"}`); err == nil {
		t.Error("the core accepted the alias of a language the options leave out")
	}
	wantError(t, runRaw(RunCode(RunCodeOptions{Languages: []string{"python"}}), `{"language":"javascript","code":"1"}`), `language "javascript" is not available; use one of python3`)
	wantError(t, runRaw(RunCode(RunCodeOptions{Languages: []string{"ruby"}}), `{"language":"ruby","code":"p 1"}`), "misconfigured", "python3 (or python)")
	if RunCode(RunCodeOptions{Interpreters: map[string]string{"javascript": "/nonexistent/node"}}).(*runCode).opts.Interpreters["node"] != "/nonexistent/node" {
		t.Error("an interpreter given for an alias is not the language's")
	}
}

// TestRunCodeTimeoutArgument: a call's timeout is documented in the schema,
// bounded by the configured limit (a larger one is refused by the core,
// naming the limit), and shortens the limit for that call only.
func TestRunCodeTimeoutArgument(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	tool := RunCode(RunCodeOptions{Timeout: 20 * time.Second})
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Minimum     int    `json:"minimum"`
			Maximum     int    `json:"maximum"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(tool.Spec().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	p := schema.Properties["timeout"]
	if p.Type != "integer" || p.Minimum != 1 || p.Maximum != 20 || !strings.Contains(p.Description, "at most 20") || slices.Contains(schema.Required, "timeout") {
		t.Fatalf("timeout property %+v, required %v", p, schema.Required)
	}
	if _, err := checkCall(tool, `{"language":"bash","code":"true","timeout":21}`); err == nil || !strings.Contains(err.Error(), "at most 20") {
		t.Fatalf("a timeout above the limit: %v", err)
	}
	if _, err := checkCall(tool, `{"language":"bash","code":"true","timeout":"5"}`); err == nil {
		t.Fatal(`the core accepted "5" for an integer timeout`)
	}
	wantError(t, runRaw(tool, `{"language":"bash","code":"true","timeout":99}`), "timeout must be from 1 to 20 seconds, found 99")
	res := run(t, tool, `{"language":"bash","code":"echo started; sleep 30","timeout":1}`)
	wantError(t, res, "timed out after 1s", "started")
	// A limit under a second still allows timeout 1, and holds.
	short := RunCode(RunCodeOptions{Timeout: 300 * time.Millisecond})
	wantError(t, run(t, short, `{"language":"bash","code":"sleep 30","timeout":1}`), "timed out after 300ms")
	wantOutput(t, run(t, tool, `{"language":"bash","code":"echo ok","timeout":5}`), "exit_code: 0", "ok")
}
