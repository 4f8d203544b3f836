package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func bashSpec(t *testing.T, script string, timeout time.Duration) procSpec {
	t.Helper()
	needProgram(t, "bash")
	return procSpec{path: "/bin/bash", args: []string{"-c", script}, env: []string{"PATH=" + minimalPath},
		timeout: timeout, maxOutput: 1 << 10}
}

func TestRunProcessKillsGroupOnTimeout(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// Long enough for a loaded machine to start the shell and print the
	// pid before the timeout kills it.
	res := runProcess(context.Background(), bashSpec(t, `sleep 30 & echo pid=$!; sleep 30`, 2*time.Second))
	if !res.timedOut {
		t.Fatalf("want timedOut, got %+v", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s after a 2s timeout", d)
	}
	waitGone(t, pidIn(t, string(res.stdout.buf)))
}

func TestRunProcessKillsBackgroundChildAfterExit(t *testing.T) {
	t.Parallel()
	start := time.Now()
	res := runProcess(context.Background(), bashSpec(t, `sleep 30 & echo pid=$!`, 10*time.Second))
	if res.timedOut || res.exitCode != 0 {
		t.Fatalf("want a clean exit, got %+v", res)
	}
	if d := time.Since(start); d > pipeGrace {
		t.Errorf("waited %s for the leftover child's pipes", d)
	}
	waitGone(t, pidIn(t, string(res.stdout.buf)))
}

func TestRunProcessCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel) // after the shell printed its pid, even on a loaded machine
	res := runProcess(ctx, bashSpec(t, `echo pid=$$; sleep 30`, 10*time.Second))
	if res.ctxErr == nil || res.timedOut {
		t.Fatalf("want ctxErr, got %+v", res)
	}
	waitGone(t, pidIn(t, string(res.stdout.buf)))
}

func TestRunProcessCapsOutput(t *testing.T) {
	t.Parallel()
	s := bashSpec(t, `head -c 100000 /dev/zero | tr '\0' a; head -c 5000 /dev/zero | tr '\0' b >&2`, 10*time.Second)
	s.maxOutput = 1000
	res := runProcess(context.Background(), s)
	if len(res.stdout.buf) != 1000 || res.stdout.cut() != 99000 {
		t.Errorf("stdout kept %d, cut %d; want 1000 and 99000", len(res.stdout.buf), res.stdout.cut())
	}
	if res.stderr.cut() != 4000 {
		t.Errorf("stderr cut %d, want 4000", res.stderr.cut())
	}
	if got := res.stdout.text(); !strings.Contains(got, "99000 more bytes cut") {
		t.Errorf("no cut note: %q", got[len(got)-80:])
	}
}

func TestRunProcessExitAndSignal(t *testing.T) {
	t.Parallel()
	res := runProcess(context.Background(), bashSpec(t, `echo out; echo err >&2; exit 7`, 10*time.Second))
	if res.exitCode != 7 || string(res.stdout.buf) != "out\n" || string(res.stderr.buf) != "err\n" {
		t.Errorf("got exit %d stdout %q stderr %q", res.exitCode, res.stdout.buf, res.stderr.buf)
	}
	res = runProcess(context.Background(), bashSpec(t, `kill -KILL $$`, 10*time.Second))
	if res.exitCode != -1 || res.signal != "killed" || res.timedOut {
		t.Errorf("got exit %d signal %q", res.exitCode, res.signal)
	}
}

func TestRunProcessEnvAndStdin(t *testing.T) {
	t.Setenv("STEPWISE_TOOLS_SECRET", "hunter2")
	s := bashSpec(t, `echo "[$STEPWISE_TOOLS_SECRET] [$EXTRA]"; cat`, 10*time.Second)
	s.env = childEnv([]string{"PATH=" + minimalPath}, []string{"EXTRA=x y"})
	s.stdin = "from stdin"
	res := runProcess(context.Background(), s)
	if got, want := string(res.stdout.buf), "[] [x y]\nfrom stdin"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRunProcessStartError(t *testing.T) {
	t.Parallel()
	res := runProcess(context.Background(), procSpec{path: filepath.Join(t.TempDir(), "missing"), timeout: time.Second, maxOutput: 10})
	if res.startErr == nil {
		t.Fatalf("want a start error, got %+v", res)
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("STEPWISE_TOOLS_A", "parent-a")
	os.Unsetenv("STEPWISE_TOOLS_UNSET")
	got := childEnv([]string{"PATH=/bin", "HOME=/h"}, []string{"STEPWISE_TOOLS_A", "STEPWISE_TOOLS_UNSET", "HOME=/other", "FIXED=1=2"})
	want := []string{"PATH=/bin", "HOME=/other", "STEPWISE_TOOLS_A=parent-a", "FIXED=1=2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range [][]string{{""}, {"1A"}, {"A-B"}, {"=x"}} {
		if checkEnvNames(bad) == nil {
			t.Errorf("checkEnvNames(%q) accepted", bad)
		}
	}
	if err := checkEnvNames([]string{"A_1", "B=", "_C=x"}); err != nil {
		t.Error(err)
	}
}

func TestCapture(t *testing.T) {
	t.Parallel()
	c := capture{max: 5}
	c.Write([]byte("héllo wörld")) // é is 2 bytes: "h\xc3\xa9ll" then a cut
	if got := c.text(); !strings.HasPrefix(got, "héll\n[... 8 more bytes cut") {
		t.Errorf("text %q", got)
	}
	c = capture{max: 4}
	c.Write([]byte("aé")) // kept whole
	c.Write([]byte("€x")) // € split by the cap
	if got := c.text(); !strings.HasPrefix(got, "aé\n[... 3 more bytes cut") {
		t.Errorf("text %q", got)
	}
	big := strings.Repeat("x", tailMax) + "the end"
	c = capture{max: 10}
	c.Write([]byte("start "))
	c.Write([]byte(big))
	if got := c.tailText(); !strings.HasPrefix(got, "...") || !strings.HasSuffix(got, "the end") || len(got) != tailMax+3 {
		t.Errorf("tailText len %d: %q", len(got), got[:20])
	}
	c = capture{max: 10}
	c.Write([]byte("short"))
	if got := c.tailText(); got != "short" {
		t.Errorf("tailText %q", got)
	}
	if got := tail("abcdef", 3); got != "...def" {
		t.Errorf("tail %q", got)
	}
	if got := tail("aé", 1); got != "..." {
		t.Errorf("tail through a rune %q", got)
	}
}
