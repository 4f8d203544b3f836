package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults of CommandSpec.
const (
	DefaultCommandTimeout   = 30 * time.Second
	DefaultCommandMaxOutput = 64 << 10
)

// CommandSpec defines a command tool: an existing program wrapped as a
// tool by an argv template. Zero values mean the defaults.
type CommandSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, an object schema
	// (empty: no arguments).
	Parameters json.RawMessage
	// Argv is the program and its arguments. Elements after the first may
	// hold {{name}} placeholders, replaced by the string form of the named
	// argument (a string as is, a number as written, true/false, "" when
	// absent, JSON for arrays and objects). Each element stays one argument:
	// there is no shell, no word splitting, no globbing. The program
	// (Argv[0]) takes no placeholders.
	Argv []string
	// Stdin is a template, like an Argv element, for the program's
	// standard input (empty: no input).
	Stdin string
	// Dir is the working directory (empty: the current directory).
	Dir string
	// Env lists the environment variables the program gets besides a
	// minimal PATH and LANG=C.UTF-8: NAME (the parent's value) or
	// NAME=value. Nothing else of the parent's environment is inherited.
	Env []string
	// Timeout bounds one run (0: DefaultCommandTimeout); on timeout the
	// process it started is killed, its descendants included.
	Timeout time.Duration
	// MaxOutput is how many bytes of stdout, and of stderr, are kept
	// (0: DefaultCommandMaxOutput).
	MaxOutput int
	// PassContext sets STEPWISE_RUN_ID, STEPWISE_STEP and STEPWISE_AGENT
	// from the call's shell.RunContext.
	PassContext bool
	// (A call whose RunContext carries a View, which the agent declares
	// for the tool with shell.ToolSettings.View, gets it as a JSON file,
	// named by STEPWISE_VIEW, readable by the program only and removed
	// when it ends; see ViewEnv.)
	// Idempotent declares the command safe to run again after a crash
	// left its outcome unknown.
	Idempotent bool
}

type command struct {
	spec  CommandSpec
	argv  []argTemplate // Argv[1:]
	stdin argTemplate
}

// Command returns the command tool spec describes, after checking it: a
// valid name, a non-empty Argv, an object schema, and placeholders that
// all name properties of the schema. A run that exits non-zero is an error
// with the tail of its stderr; otherwise the output is its stdout.
func Command(spec CommandSpec) (shell.Tool, error) {
	if !validName(spec.Name) {
		return nil, fmt.Errorf("command tool %q: the name must be 1-64 letters, digits, '_', '-' or '.'", spec.Name)
	}
	fail := func(format string, args ...any) (shell.Tool, error) {
		return nil, fmt.Errorf("command tool %q: %s", spec.Name, fmt.Sprintf(format, args...))
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return fail("argv is empty; give the program and its arguments")
	}
	if strings.Contains(spec.Argv[0], "{{") {
		return fail("the program %q may not hold a placeholder", spec.Argv[0])
	}
	if spec.Timeout < 0 || spec.MaxOutput < 0 {
		return fail("timeout and max output must not be negative")
	}
	if err := checkEnvNames(spec.Env); err != nil {
		return fail("%v", err)
	}
	if len(spec.Parameters) == 0 {
		spec.Parameters = objectSchema(nil)
	}
	props, err := schemaProperties(spec.Parameters)
	if err != nil {
		return fail("parameters: %v", err)
	}
	c := &command{spec: spec}
	var used []string
	for _, a := range spec.Argv[1:] {
		t, err := parseTemplate(a)
		if err != nil {
			return fail("argv: %v", err)
		}
		c.argv = append(c.argv, t)
		used = append(used, t.args()...)
	}
	if c.stdin, err = parseTemplate(spec.Stdin); err != nil {
		return fail("stdin: %v", err)
	}
	used = append(used, c.stdin.args()...)
	for _, name := range used {
		if !slices.Contains(props, name) {
			return fail("placeholder {{%s}} names no property of the parameters (they are: %s)", name, strings.Join(props, ", "))
		}
	}
	if c.spec.Timeout == 0 {
		c.spec.Timeout = DefaultCommandTimeout
	}
	if c.spec.MaxOutput == 0 {
		c.spec.MaxOutput = DefaultCommandMaxOutput
	}
	return c, nil
}

// schemaProperties returns the property names of an object schema, sorted.
func schemaProperties(raw json.RawMessage) ([]string, error) {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if s.Type != nil && s.Type != "object" {
		return nil, errors.New(`type must be "object"`)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '-' && r != '.' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (c *command) Spec() core.Tool {
	return core.Tool{
		Name:        c.spec.Name,
		Description: c.spec.Description,
		Parameters:  c.spec.Parameters,
		Idempotent:  c.spec.Idempotent,
	}
}

// ViewEnv is the environment variable that names the file holding the
// view of the run a command tool declared (shell.View), as JSON:
// {"run_id": ..., "step": ..., "agent": ..., "tools_used": [...],
// "messages": [...]}, with the declared fields only. Standard input stays
// the tool's stdin template.
const ViewEnv = "STEPWISE_VIEW"

// exitTempFail is EX_TEMPFAIL (sysexits.h): a command that exits with it
// reports a failure that may go away on its own (retried for an
// idempotent tool, then the run stalls).
const exitTempFail = 75

// streamLines reports each line a tool writes as it writes it, numbered
// (ToolProgress.Progress), when the runner listens.
func streamLines(rc shell.RunContext) func(string) {
	if rc.Progress == nil {
		return nil
	}
	n := 0
	return func(line string) {
		n++
		rc.Report(shell.ToolProgress{Progress: float64(n), Message: line})
	}
}

func (c *command) Run(ctx context.Context, call core.ToolCall, rc shell.RunContext) core.ToolResult {
	args, err := decodeArgMap(call.Args)
	if err != nil {
		return failf(call, "%v", err)
	}
	path := c.spec.Argv[0]
	if !strings.Contains(path, "/") { // a path with a slash is used as is (relative to Dir)
		if path, err = exec.LookPath(path); err != nil {
			return failf(call, "the program %q is not available: %v", c.spec.Argv[0], errText(err))
		}
	}
	argv := make([]string, len(c.argv))
	for i, t := range c.argv {
		argv[i] = t.expand(args)
	}
	pass := slices.Clone(c.spec.Env)
	if c.spec.PassContext {
		pass = append(pass, "STEPWISE_RUN_ID="+rc.RunID, "STEPWISE_STEP="+strconv.Itoa(rc.Step), "STEPWISE_AGENT="+rc.Agent)
	}
	if rc.View != nil {
		file, cleanup, err := writeView(rc.View)
		if err != nil {
			return failf(call, "cannot hand the tool its view of the run: %v", err)
		}
		defer cleanup()
		pass = append(pass, ViewEnv+"="+file)
	}
	res := runProcess(ctx, procSpec{
		path:      path,
		args:      argv,
		dir:       c.spec.Dir,
		env:       childEnv([]string{"PATH=" + minimalPath, "LANG=C.UTF-8"}, pass),
		stdin:     c.stdin.expand(args),
		timeout:   c.spec.Timeout,
		maxOutput: c.spec.MaxOutput,
		onLine:    streamLines(rc),
	})
	switch {
	case res.ctxErr != nil:
		return interrupted(call, res.ctxErr)
	case res.startErr != nil:
		return failf(call, "cannot run %s: %v", c.spec.Argv[0], res.startErr)
	case res.timedOut:
		return failf(call, "timed out after %s; it and every process it started were killed", c.spec.Timeout)
	case res.exitCode != 0:
		why := fmt.Sprintf("exited with status %d", res.exitCode)
		if res.signal != "" {
			why = "was killed by signal: " + res.signal
		}
		detail := res.stderr.tailText()
		if strings.TrimSpace(detail) == "" {
			detail = res.stdout.tailText()
		}
		if detail = strings.TrimSpace(detail); detail != "" {
			why += ":\n" + detail
		}
		if res.exitCode == exitTempFail {
			return transientf(call, "%s %s", c.spec.Argv[0], why)
		}
		return failf(call, "%s %s", c.spec.Argv[0], why)
	}
	out := res.stdout.text()
	if res.stdout.total == 0 {
		out = "(no output)"
	}
	return core.ToolResult{CallID: call.ID, Output: out}
}

// writeView writes the view as JSON to a file of its own, in a directory
// of its own that only this user can enter, and returns its path and what
// removes both.
func writeView(v *shell.RunView) (string, func(), error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "stepwise-view-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	file := filepath.Join(dir, "view.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	return file, cleanup, nil
}
