// Command stepwise runs LLM agents as checkpointed, replayable state machines.
//
// Run `stepwise help` for the commands and exit codes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/stepwise-agent/stepwise/shell/tools"
)

// Exit codes, documented in `stepwise help`.
const (
	exitCompleted   = 0
	exitFailed      = 1
	exitUsage       = 2
	exitPaused      = 3
	exitInterrupted = 4
	exitInternal    = 5
	exitBusy        = 6
	exitStalled     = 7
	// exitUnreplayable: replay --all/--runs and test found runs that could
	// not be replayed, and none that diverged or failed.
	exitUnreplayable = 8
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// command is one subcommand.
type command struct {
	name, args, summary, help string
	run                       func(env *env, args []string) int
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// env is what a command may touch: its streams and environment.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// atExit runs when the command ends, last registered first (the
	// tracer's flush).
	atExit []func()
	// durability is the --durability flag of the command, when it opens a
	// store (dbFlag).
	durability *string
}

func main() {
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	// Tools must not read this process's environment (API keys) or memory
	// through /proc. The bench runs no tool process and reads its own
	// /proc/self/io, which a non-dumpable process cannot.
	if len(os.Args) < 2 || os.Args[1] != "bench" {
		if err := tools.HideEnvironment(); err != nil {
			fmt.Fprintf(os.Stderr, "stepwise: cannot hide the environment from tools: %v\n", err)
		}
	}
	os.Exit(e.main(os.Args[1:]))
}

func (e *env) main(args []string) (code int) {
	defer e.flushAll()
	defer e.exit()
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(e.stderr, "stepwise: internal error: %v\n", p)
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		e.usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		e.usage(e.stdout)
		return 0
	case "-v", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "stepwise: unknown command %q\n\n", name)
		e.usage(e.stderr)
		return exitUsage
	}
	return c.run(e, args[1:])
}

const exitCodesHelp = `Exit codes:
  0  the run completed (or the command succeeded)
  1  the run failed or was cancelled (or replay found a divergence)
  2  usage or config error (bad flags, bad agent file, bad or missing results file)
  3  the run is paused awaiting tool results (resume it with --results)
  4  the run was interrupted (resume it with stepwise resume RUN_ID)
  5  internal error (the store, the disk)
  6  busy: another process drives the run, or took it over, or already answered
     its pause (retry later, or pass --wait DURATION)
  7  the run stalled: a model, tool or the store stayed unavailable past its retry
     policy, or an in-doubt call waits for you (resume it later, or with --agent FILE)
  8  replay --all/--runs, test: some runs could not be replayed, and none
     diverged or failed
`

func (e *env) usage(w io.Writer) {
	fmt.Fprintf(w, "stepwise runs LLM agents as checkpointed, replayable state machines.\n\nUsage: stepwise COMMAND [ARGS]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun `stepwise help COMMAND` or `stepwise COMMAND --help` for details.\n\n%s", exitCodesHelp)
	fmt.Fprintf(w, "\nStatuses: running, awaiting_tool_results, interrupted, stalled, completed, failed, cancelled.\n")
	fmt.Fprintf(w, "\nEnvironment:\n  STEPWISE_DB         the database when --db is not given: a SQLite file or a\n                      postgres:// URL (default ./stepwise.db)\n"+
		"  STEPWISE_LEASE_TTL  how long a run's lease lasts unless renewed (default 15s)\n  NO_COLOR            plain progress output\n"+
		"  OTEL_EXPORTER_OTLP_ENDPOINT  send runs' traces there as they happen (OTLP/HTTP; see stepwise help trace)\n"+
		"  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true  with message content\n")
}

// flags builds a command's flag set; parse accepts flags before, between and
// after positional arguments.
func (e *env) flags(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args into fs and returns the positional arguments, or a usage
// error (with the command's help for -h).
func (e *env) parse(c *command, fs *flag.FlagSet, args []string, min, max int) ([]string, int) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.commandHelp(e.stdout, c, fs)
				return nil, 0
			}
			fmt.Fprintf(e.stderr, "stepwise %s: %v\n", c.name, err)
			fmt.Fprintf(e.stderr, "usage: stepwise %s %s\n", c.name, c.args)
			return nil, exitUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		fmt.Fprintf(e.stderr, "stepwise %s: wrong number of arguments\nusage: stepwise %s %s\n", c.name, c.name, c.args)
		return nil, exitUsage
	}
	return pos, -1
}

func (e *env) commandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: stepwise %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
	if fs != nil {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if b.Len() > 0 {
			fmt.Fprintf(w, "\nFlags:\n%s", b.String())
		}
	}
}

func init() {
	register(&command{name: "help", args: "[COMMAND]", summary: "show help for stepwise or a command",
		help: "Shows the commands, or one command's usage and flags.",
		run: func(e *env, args []string) int {
			if len(args) == 0 {
				e.usage(e.stdout)
				return 0
			}
			if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
				e.commandHelp(e.stdout, commands["help"], nil)
				return 0
			}
			c, ok := commands[args[0]]
			if !ok {
				fmt.Fprintf(e.stderr, "stepwise help: unknown command %q\n", args[0])
				return exitUsage
			}
			// Build the flag set the command would use, for its defaults.
			c.run(&env{stdin: strings.NewReader(""), stdout: e.stdout, stderr: io.Discard, getenv: e.getenv}, []string{"--help"})
			return 0
		}})
	register(&command{name: "version", args: "", summary: "print the version",
		help: "Prints the version of stepwise.",
		run: func(e *env, args []string) int {
			c := commands["version"]
			fs := e.flags(c)
			if _, code := e.parse(c, fs, args, 0, 0); code >= 0 {
				return code
			}
			fmt.Fprintf(e.stdout, "stepwise %s\n", version)
			return 0
		}})
}
