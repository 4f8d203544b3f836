package tools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/script"
	"github.com/stepwise-agent/stepwise/shell/tools"
	"github.com/stepwise-agent/stepwise/store/sqlite"
	"golang.org/x/sys/unix"
)

// With embedderEnv set, TestEmbedderEnvironment is a program that embeds
// the library (this test binary, started again): it runs an agent whose
// command tool tries to read the program's environment through /proc.
const (
	embedderEnv = "STEPWISE_TOOLS_TEST_EMBEDDER"
	secretEnv   = "STEPWISE_TOOLS_TEST_SECRET"
	secretValue = "sk-embedder-secret-4711"
)

// TestEmbedderEnvironment: a program that embeds stepwise and never calls
// HideEnvironment still hides its environment from its tools' processes;
// with ExposeEnvironment they can read it.
func TestEmbedderEnvironment(t *testing.T) {
	if mode := os.Getenv(embedderEnv); mode != "" {
		embedder(t, mode)
		return
	}
	for _, c := range []struct {
		mode     string
		readable bool
	}{{"default", false}, {"expose", true}} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestEmbedderEnvironment$", "-test.count=1")
			cmd.Env = append(os.Environ(), embedderEnv+"="+c.mode, secretEnv+"="+secretValue)
			out, err := runUnprivileged(t, cmd)
			if err != nil {
				t.Fatalf("the embedder failed: %v\n%s", err, out)
			}
			line := ""
			for l := range strings.Lines(string(out)) {
				if strings.HasPrefix(l, "tool result: ") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("the embedder reported no tool result:\n%s", out)
			}
			if got := strings.Contains(line, secretEnv+"="+secretValue); got != c.readable {
				t.Fatalf("the tool read the embedder's environment: %v, want %v\n%s", got, c.readable, line)
			}
			if !c.readable && !strings.Contains(line, "Permission denied") {
				t.Fatalf("the tool's read did not fail for want of permission:\n%s", line)
			}
		})
	}
}

// runUnprivileged runs cmd without the capabilities a tool's process never
// has (CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON): a process that has
// them is closed to a tool's process whether or not it hides its
// environment, so only without them does the test show what the hiding
// does. It drops them from the bounding set of a thread of its own, which
// starts cmd (a root process gets its bounding set at exec) and then ends.
func runUnprivileged(t *testing.T, cmd *exec.Cmd) ([]byte, error) {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for _, c := range []int{unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_PERFMON} {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			if err != nil && !errors.Is(err, unix.EINVAL) && os.Geteuid() == 0 {
				done <- result{nil, fmt.Errorf("drop capability %d: %w", c, err)}
				return
			}
		}
		out, err := cmd.CombinedOutput()
		done <- result{out, err}
	}()
	r := <-done
	return r.out, r.err
}

// embedder runs, through a Runner on a SQLite file, a command tool that
// prints the SECRET variable of this process's environment, read from
// /proc/<pid>/environ, and prints the tool's result.
func embedder(t *testing.T, mode string) {
	if mode == "expose" {
		if err := tools.ExposeEnvironment(); err != nil {
			t.Fatal(err)
		}
	}
	peek, err := tools.Command(tools.CommandSpec{Name: "peek", Description: "Read the runner's environment.", Argv: []string{
		"/bin/sh", "-c", `tr '\0' '\n' < /proc/` + strconv.Itoa(os.Getpid()) + `/environ | grep '^` + secretEnv + `='`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	reg := shell.NewRegistry()
	if err := reg.Internal(peek, nil); err != nil {
		t.Fatal(err)
	}
	cfg := core.DefaultConfig()
	cfg.Name = "peeker"
	ag, err := reg.Agent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	model, err := script.Parse(strings.NewReader(`{"tool_calls":[{"id":"c1","name":"peek","arguments":{}}]}
{"text":"done"}`), "peek.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ag.Models[core.Primary] = model
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seen resultObserver
	out, err := shell.NewRunner(db, &shell.Options{Observer: &seen}).Start(context.Background(), ag, "peek")
	if err != nil || out.Status != "completed" {
		t.Fatalf("run: %+v %v", out, err)
	}
	fmt.Printf("tool result: %q\n", seen.text)
}

// resultObserver keeps the text of the last tool result it is told of.
type resultObserver struct{ text string }

func (o *resultObserver) Event(e shell.Event) {
	if rs, ok := e.Result.(core.ToolResults); ok && e.Kind == "tool" && len(rs.Results) == 1 {
		o.text = "output=" + rs.Results[0].Output + " error=" + rs.Results[0].Error
	}
}
