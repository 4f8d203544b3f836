package tools

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRunCodeLanguages(t *testing.T) {
	t.Parallel()
	tool := RunCode(RunCodeOptions{})
	for _, tc := range []struct{ lang, code string }{
		{"python3", "import os\nprint('hi from', 'python3', os.getcwd() == os.environ['HOME'])"},
		{"bash", `echo hi from bash $([ "$PWD" = "$HOME" ] && echo True)`},
		{"node", "console.log('hi from', 'node', process.cwd() === process.env.HOME ? 'True' : 'False')"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			needProgram(t, tc.lang)
			args, _ := json.Marshal(map[string]string{"language": tc.lang, "code": tc.code})
			res := run(t, tool, string(args))
			wantOutput(t, res, "exit_code: 0\n--- stdout ---\nhi from "+tc.lang+" True\n")
		})
	}
}

func TestRunCodeNonZeroExitIsOutput(t *testing.T) {
	t.Parallel()
	needProgram(t, "python3")
	res := run(t, RunCode(RunCodeOptions{}), `{"language":"python3","code":"import sys\nprint('partial')\nraise SystemExit('boom')"}`)
	wantOutput(t, res, "exit_code: 1", "--- stdout ---\npartial\n", "--- stderr ---\nboom\n")
}

func TestRunCodeTimeoutKillsGrandchild(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	tool := RunCode(RunCodeOptions{Timeout: 2 * time.Second}) // time to print the pid, even on a loaded machine
	start := time.Now()
	res := run(t, tool, `{"language":"bash","code":"sleep 30 &\necho pid=$!\nwait"}`)
	wantError(t, res, "timed out after 2s", "every process it started were killed", "pid=")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	waitGone(t, pidIn(t, res.Error))
}

func TestRunCodeBackgroundChildDoesNotSurvive(t *testing.T) {
	t.Parallel()
	needProgram(t, "python3")
	code := "import subprocess\np = subprocess.Popen(['sleep', '30'])\nprint('pid=%d' % p.pid)"
	res := run(t, RunCode(RunCodeOptions{}), `{"language":"python3","code":`+jsonString(code)+`}`)
	wantOutput(t, res, "exit_code: 0")
	waitGone(t, pidIn(t, res.Output))
}

func TestRunCodeEnvironment(t *testing.T) {
	needProgram(t, "bash")
	t.Setenv("STEPWISE_TOOLS_SECRET", "hunter2")
	t.Setenv("STEPWISE_TOOLS_SHARED", "shared-value")
	tool := RunCode(RunCodeOptions{Env: []string{"STEPWISE_TOOLS_SHARED", "FIXED=1"}})
	res := run(t, tool, `{"language":"bash","code":"env | sort"}`)
	wantOutput(t, res, "STEPWISE_TOOLS_SHARED=shared-value", "FIXED=1", "LANG=C.UTF-8", "PATH=")
	if strings.Contains(res.Output, "hunter2") {
		t.Errorf("the parent's environment leaked:\n%s", res.Output)
	}
}

func TestRunCodeScratchDirRemoved(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	root := t.TempDir()
	res := run(t, RunCode(RunCodeOptions{ScratchRoot: root}), `{"language":"bash","code":"echo data > f.txt; mkdir -p d/e; ls"}`)
	wantOutput(t, res, "d\nf.txt\nmain.sh\n")
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("scratch left behind: %v", ents)
	}
}

func TestRunCodeOutputCap(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	res := run(t, RunCode(RunCodeOptions{MaxOutput: 100}), `{"language":"bash","code":"head -c 1000 /dev/zero | tr '\\0' x"}`)
	wantOutput(t, res, strings.Repeat("x", 100)+"\n[... 900 more bytes cut: the limit is 100 bytes]")
}

func TestRunCodeNoOutput(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	res := run(t, RunCode(RunCodeOptions{}), `{"language":"bash","code":"true"}`)
	if res.Output != "exit_code: 0\n(no output)\n" {
		t.Errorf("output %q", res.Output)
	}
}

func TestRunCodeLanguageChoice(t *testing.T) {
	t.Parallel()
	tool := RunCode(RunCodeOptions{Languages: []string{"bash"}})
	if _, err := checkCall(tool, `{"language":"python3","code":"print(1)"}`); err == nil {
		t.Error("the core accepted a language the schema leaves out")
	}
	wantError(t, runRaw(tool, `{"language":"python3","code":"print(1)"}`), `language "python3" is not available; use one of bash`)
	wantError(t, runRaw(tool, `{"language":"bash","code":"true","extra":1}`), "bad arguments")
	wantError(t, runRaw(RunCode(RunCodeOptions{Languages: []string{"ruby"}}), `{"language":"ruby","code":"p 1"}`), "misconfigured", `"ruby"`)
	wantError(t, runRaw(RunCode(RunCodeOptions{Interpreters: map[string]string{"bash": "/nonexistent/bash"}}), `{"language":"bash","code":"true"}`), "bash is not installed on this machine")
	if tool.Spec().Idempotent {
		t.Error("run_code must not be idempotent")
	}
}

func TestRunCodeInterrupted(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res := runWith(t, ctx, RunCode(RunCodeOptions{}), `{"language":"bash","code":"sleep 30"}`)
	wantError(t, res, "interrupted")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
