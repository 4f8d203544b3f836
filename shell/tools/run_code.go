package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults of RunCodeOptions.
const (
	DefaultRunCodeTimeout   = 10 * time.Second
	DefaultRunCodeMaxOutput = 64 << 10
)

// RunCodeOptions configures run_code. Zero values mean the defaults.
type RunCodeOptions struct {
	// Languages the model may use, in the order the schema lists them, each
	// one of "python3", "bash", "node" (empty: all three).
	Languages []string
	// Interpreters overrides the program that runs a language, by language
	// name (default: the language's name looked up in PATH at call time).
	Interpreters map[string]string
	// Timeout bounds one run (0: DefaultRunCodeTimeout); the caller's
	// context bounds it too.
	Timeout time.Duration
	// MaxOutput is how many bytes of stdout, and of stderr, are kept
	// (0: DefaultRunCodeMaxOutput); the result says how much was cut.
	MaxOutput int
	// ScratchRoot is where the per-call scratch directories are made
	// (empty: the OS temp dir).
	ScratchRoot string
	// Env lists the environment variables the code gets besides PATH (a
	// minimal one), HOME and TMPDIR (the scratch dir) and LANG=C.UTF-8: each
	// entry is NAME (the parent's value) or NAME=value. Nothing else of the
	// parent's environment is inherited.
	Env []string
}

// language is how one language is run: program scriptfile.
type language struct {
	program string
	file    string
}

var languages = map[string]language{
	"python3": {program: "python3", file: "main.py"},
	"bash":    {program: "bash", file: "main.sh"},
	"node":    {program: "node", file: "main.js"},
}

var defaultLanguages = []string{"python3", "bash", "node"}

func (o RunCodeOptions) withDefaults() RunCodeOptions {
	if len(o.Languages) == 0 {
		o.Languages = defaultLanguages
	}
	var langs []string
	for _, l := range o.Languages {
		if !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	o.Languages = langs
	if o.Timeout <= 0 {
		o.Timeout = DefaultRunCodeTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultRunCodeMaxOutput
	}
	return o
}

func (o RunCodeOptions) validate() error {
	for _, l := range o.Languages {
		if _, ok := languages[l]; !ok {
			return fmt.Errorf("run_code: language %q is not one of python3, bash, node", l)
		}
	}
	for l := range o.Interpreters {
		if _, ok := languages[l]; !ok {
			return fmt.Errorf("run_code: interpreter for unknown language %q", l)
		}
	}
	if o.Timeout < 0 || o.MaxOutput < 0 {
		return fmt.Errorf("run_code: timeout and max output must not be negative")
	}
	if err := checkEnvNames(o.Env); err != nil {
		return fmt.Errorf("run_code: %w", err)
	}
	return nil
}

type runCode struct {
	opts RunCodeOptions
	err  error // a configuration problem, reported by every call
}

// RunCode returns the run_code tool: it runs python3, bash or node code in
// a fresh scratch directory, removed afterwards, and returns the exit code,
// stdout and stderr. A non-zero exit is an output the model reads; a
// timeout (the program and every process it started are killed) is an
// error. Not idempotent.
func RunCode(opts RunCodeOptions) shell.Tool {
	return &runCode{opts: opts.withDefaults(), err: opts.validate()}
}

func (t *runCode) Spec() core.Tool {
	return core.Tool{
		Name: "run_code",
		Description: fmt.Sprintf("Run a program and get its exit code, stdout and stderr. Languages: %s. "+
			"It runs in a fresh, empty working directory that is deleted afterwards, with a minimal environment. "+
			"Time limit %s; output beyond %d bytes per stream is cut.", strings.Join(t.opts.Languages, ", "), t.opts.Timeout, t.opts.MaxOutput),
		Parameters: objectSchema([]prop{
			{"language", map[string]any{"type": "string", "enum": t.opts.Languages, "description": "the interpreter to run the code with"}},
			{"code", map[string]any{"type": "string", "minLength": 1, "description": "the complete program source"}},
		}, "language", "code"),
	}
}

type runCodeArgs struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

func (t *runCode) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	if t.err != nil {
		return failf(call, "misconfigured: %v", t.err)
	}
	var a runCodeArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	lang, ok := languages[a.Language]
	if !ok || !slices.Contains(t.opts.Languages, a.Language) {
		return failf(call, "language %q is not available; use one of %s", a.Language, strings.Join(t.opts.Languages, ", "))
	}
	program := t.opts.Interpreters[a.Language]
	if program == "" {
		program = lang.program
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return failf(call, "%s is not installed on this machine", a.Language)
	}
	if path, err = filepath.Abs(path); err != nil {
		return failf(call, "%v", err)
	}

	dir, err := os.MkdirTemp(t.opts.ScratchRoot, "run_code-")
	if err != nil {
		return failf(call, "cannot make a scratch directory: %v", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, lang.file), []byte(a.Code), 0o600); err != nil {
		return failf(call, "cannot write the code: %v", err)
	}

	res := runProcess(ctx, procSpec{
		path: path,
		args: []string{lang.file},
		dir:  dir,
		env: childEnv([]string{
			"PATH=" + pathWith(path), "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8",
		}, t.opts.Env),
		timeout:   t.opts.Timeout,
		maxOutput: t.opts.MaxOutput,
	})
	switch {
	case res.ctxErr != nil:
		return interrupted(call, res.ctxErr)
	case res.startErr != nil:
		return failf(call, "cannot run %s: %v", a.Language, res.startErr)
	case res.timedOut:
		return failf(call, "timed out after %s; it and every process it started were killed. Output so far:\n%s", t.opts.Timeout, describeStreams(&res))
	}
	return core.ToolResult{CallID: call.ID, Output: describeExit(&res) + "\n" + describeStreams(&res)}
}

// describeExit renders how the process ended: "exit_code: N", plus the
// signal that killed it, if one did.
func describeExit(r *procResult) string {
	s := fmt.Sprintf("exit_code: %d", r.exitCode)
	if r.signal != "" {
		s += " (killed by signal: " + r.signal + ")"
	}
	return s
}

// describeStreams renders stdout and stderr as labelled blocks, leaving out
// an empty stream.
func describeStreams(r *procResult) string {
	var b strings.Builder
	for _, s := range []struct {
		name string
		c    *capture
	}{{"stdout", &r.stdout}, {"stderr", &r.stderr}} {
		if s.c.total == 0 {
			continue
		}
		text := s.c.text()
		fmt.Fprintf(&b, "--- %s ---\n%s", s.name, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		return "(no output)\n"
	}
	return b.String()
}
