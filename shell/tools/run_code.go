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
	// one of "python3", "bash", "node", or an alias of one (see
	// LanguageAliases) (empty: all three).
	Languages []string
	// Interpreters overrides the program that runs a language, by language
	// name or alias (default: the language's name looked up in PATH at call
	// time).
	Interpreters map[string]string
	// Timeout bounds one run (0: DefaultRunCodeTimeout); the caller's
	// context bounds it too. It is also the most a call may ask for with
	// its timeout argument.
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

// LanguageAliases are the other names run_code takes for its languages,
// in its options and in a call's language argument (the names seed
// designs use): python for python3, javascript for node. bash is bash.
var LanguageAliases = map[string]string{"python": "python3", "javascript": "node"}

// aliasesOf are the aliases of each language, in the order the schema
// lists them.
var aliasesOf = map[string][]string{"python3": {"python"}, "node": {"javascript"}}

// canonicalLanguage is the language name is, or an alias of.
func canonicalLanguage(name string) string {
	if c, ok := LanguageAliases[name]; ok {
		return c
	}
	return name
}

func (o RunCodeOptions) withDefaults() RunCodeOptions {
	if len(o.Languages) == 0 {
		o.Languages = defaultLanguages
	}
	var langs []string
	for _, l := range o.Languages {
		if l = canonicalLanguage(l); !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	o.Languages = langs
	if len(o.Interpreters) > 0 {
		progs := make(map[string]string, len(o.Interpreters))
		for l, p := range o.Interpreters {
			progs[canonicalLanguage(l)] = p
		}
		o.Interpreters = progs
	}
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
		if _, ok := languages[canonicalLanguage(l)]; !ok {
			return fmt.Errorf("run_code: language %q is not one of python3 (or python), bash, node (or javascript)", l)
		}
	}
	for l := range o.Interpreters {
		if _, ok := languages[canonicalLanguage(l)]; !ok {
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
//
// Its arguments: language (a configured language or its alias: python,
// javascript, bash), code, and an optional timeout in whole seconds, from
// 1 to the configured Timeout (rounded down, at least 1); the schema says
// so, so the core refuses a larger value with a correction naming the
// limit. A call without timeout gets the configured Timeout, and a call's
// timeout never exceeds it.
func RunCode(opts RunCodeOptions) shell.Tool {
	return &runCode{opts: opts.withDefaults(), err: opts.validate()}
}

func (t *runCode) Spec() core.Tool {
	names := slices.Clone(t.opts.Languages)
	var described []string
	for _, l := range t.opts.Languages {
		if as := aliasesOf[l]; len(as) > 0 {
			names = append(names, as...)
			described = append(described, fmt.Sprintf("%s (or %s)", l, strings.Join(as, ", ")))
		} else {
			described = append(described, l)
		}
	}
	maxSecs := t.maxTimeoutSeconds()
	return core.Tool{
		Name: "run_code",
		Description: fmt.Sprintf("Run a program and get its exit code, stdout and stderr. Languages: %s. "+
			"It runs in a fresh, empty working directory that is deleted afterwards, with a minimal environment. "+
			"Time limit %s; output beyond %d bytes per stream is cut.", strings.Join(described, ", "), t.opts.Timeout, t.opts.MaxOutput),
		Parameters: objectSchema([]prop{
			{"language", map[string]any{"type": "string", "enum": names, "description": "the interpreter to run the code with"}},
			{"code", map[string]any{"type": "string", "minLength": 1, "description": "the complete program source"}},
			{"timeout", map[string]any{"type": "integer", "minimum": 1, "maximum": maxSecs,
				"description": fmt.Sprintf("seconds before the program is killed, at most %d (default: the time limit)", maxSecs)}},
		}, "language", "code"),
	}
}

// maxTimeoutSeconds is the most a call's timeout may ask for: the
// configured timeout in whole seconds, at least 1.
func (t *runCode) maxTimeoutSeconds() int {
	return max(1, int(t.opts.Timeout/time.Second))
}

type runCodeArgs struct {
	Language string `json:"language"`
	Code     string `json:"code"`
	// Timeout is in seconds; 0: the configured timeout.
	Timeout int `json:"timeout"`
}

func (t *runCode) Run(ctx context.Context, call core.ToolCall, rc shell.RunContext) core.ToolResult {
	if t.err != nil {
		return failf(call, "misconfigured: %v", t.err)
	}
	var a runCodeArgs
	if err := decodeArgs(call, &a); err != nil {
		return failf(call, "%v", err)
	}
	name := canonicalLanguage(a.Language)
	lang, ok := languages[name]
	if !ok || !slices.Contains(t.opts.Languages, name) {
		return failf(call, "language %q is not available; use one of %s", a.Language, strings.Join(t.opts.Languages, ", "))
	}
	timeout := t.opts.Timeout
	switch maxSecs := t.maxTimeoutSeconds(); {
	case a.Timeout < 0 || a.Timeout > maxSecs:
		return failf(call, "timeout must be from 1 to %d seconds, found %d", maxSecs, a.Timeout)
	case a.Timeout > 0:
		timeout = min(timeout, time.Duration(a.Timeout)*time.Second)
	}
	program := t.opts.Interpreters[name]
	if program == "" {
		program = lang.program
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return failf(call, "%s is not installed on this machine", name)
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
		timeout:   timeout,
		maxOutput: t.opts.MaxOutput,
		onLine:    streamLines(rc),
	})
	switch {
	case res.ctxErr != nil:
		return interrupted(call, res.ctxErr)
	case res.startErr != nil:
		return failf(call, "cannot run %s: %v", name, res.startErr)
	case res.timedOut:
		return failf(call, "timed out after %s; it and every process it started were killed. Output so far:\n%s", timeout, describeStreams(&res))
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
