//go:build linux

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// Helper runners: with helperEnv set, the test binary runs helperMain
// instead of the tests, as a stand-in for a stepwise process that runs a
// tool (and whose supervisors are this binary too).
const (
	helperEnv    = "STEPWISE_TOOLS_TEST_HELPER"
	helperMarker = "STEPWISE_TOOLS_TEST_MARKER"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain runs one tool call as a runner would and prints its result:
// "hold" runs escapees (with the marker in helperMarker) and then sleeps
// until it is killed; "environ" hides its environment, then runs a tool
// that tries to read the environment and memory of its ancestors.
func helperMain(mode string) int {
	code := ""
	switch mode {
	case "hold":
		code = escapees(os.Getenv(helperMarker)) + "sleep 300\n"
	case "environ":
		if err := HideEnvironment(); err != nil {
			fmt.Println("HideEnvironment:", err)
			return 1
		}
		code = readAncestors
	default:
		fmt.Println("unknown helper mode", mode)
		return 2
	}
	fmt.Printf("runner pid=%d\n", os.Getpid())
	args, _ := json.Marshal(map[string]string{"language": "bash", "code": code})
	tool := RunCode(RunCodeOptions{Timeout: 2 * time.Minute, MaxOutput: 1 << 20})
	res := tool.Run(context.Background(), core.ToolCall{ID: "c1", Name: "run_code", Args: args}, shell.RunContext{})
	fmt.Println(res.Output + res.Error)
	return 0
}

// escapees is bash code that starts five sleepers marked with marker in
// their argv, four of which escape a process group kill: a plain background
// child, one in a new session, one orphaned in a new session (setsid -f
// forks), one orphaned by a double fork, and one orphaned by a process in a
// new session. It then waits until all five run and prints how many do.
// The marker is in no other process's argv.
func escapees(marker string) string {
	return `export M=` + marker + `
sleep $M &
setsid sleep $M &
setsid -f sleep $M
( (sleep $M &) & )
( setsid bash -c 'sleep $M &' & )
for i in $(seq 100); do
  n=0
  for f in /proc/[0-9]*/cmdline; do
    { IFS= read -r -d '' a0 && IFS= read -r -d '' a1; } < "$f" 2>/dev/null || continue
    [ "$a0" = sleep ] && [ "$a1" = "$M" ] && n=$((n+1))
  done
  [ "$n" -ge 5 ] && break
  sleep 0.05
done
echo "running=$n"
`
}

// readAncestors is bash code that walks up its ancestors and tries to read
// each one's environment (/proc/<pid>/environ) and memory (/proc/<pid>/mem,
// from offset 0 with cat and the initial stack, where the environment
// strings are, with dd), printing any SECRET_TOKEN it finds.
const readAncestors = `grep -E '^Cap(Eff|Bnd):' /proc/self/status
pid=$$
while :; do
  pid=$(awk '/^PPid:/ {print $2}' /proc/$pid/status)
  [ "${pid:-0}" -gt 1 ] || break
  echo "ancestor $pid"
  tr '\0' '\n' < /proc/$pid/environ | grep -a '^SECRET_TOKEN='
  cat /proc/$pid/mem | tr '\0' '\n' | grep -a 'SECRET_TOKEN='
  stack=$(awk '/\[stack\]/ {print $1}' /proc/$pid/maps)
  if [ -n "$stack" ]; then
    lo=$((16#${stack%-*})); hi=$((16#${stack#*-}))
    dd if=/proc/$pid/mem bs=4096 skip=$((lo/4096)) count=$(((hi-lo)/4096)) 2>/dev/null | tr '\0' '\n' | grep -a '^SECRET_TOKEN='
    echo "read the stack of $pid"
  fi
done
`

// newMarker returns a sleep duration of about 300 s unique to one test.
func newMarker() string { return fmt.Sprintf("300.%09d", rand.IntN(1e9)) }

// marked returns the processes whose argv holds marker, but for this one.
// A zombie has no argv: it counts as gone.
func marked(marker string) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitMarked waits up to within until exactly n processes hold marker.
func waitMarked(t *testing.T, marker string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := marked(marker)
		if len(got) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes hold %s after %s, want %d: %v", len(got), marker, within, n, describe(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe renders processes with their parent and argv, for messages.
func describe(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "\n  %d (parent %d): %s", pid, parentOf(pid), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	return b.String()
}

func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// childrenOf returns the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, name := range names {
		p, _ := strconv.Atoi(filepath.Base(name))
		if parentOf(p) == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

func TestRunCodeTimeoutKillsEscapees(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	needProgram(t, "setsid")
	marker := newMarker()
	tool := RunCode(RunCodeOptions{Timeout: 2 * time.Second})
	res := run(t, tool, `{"language":"bash","code":`+jsonString(escapees(marker)+"sleep 30\n")+`}`)
	wantError(t, res, "timed out after 2s", "running=5")
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("left after the timeout:%s", describe(left))
	}
}

func TestRunCodeExitKillsEscapees(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	needProgram(t, "setsid")
	marker := newMarker()
	res := run(t, RunCode(RunCodeOptions{}), `{"language":"bash","code":`+jsonString(escapees(marker))+`}`)
	wantOutput(t, res, "exit_code: 0", "running=5")
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("left after the call:%s", describe(left))
	}
}

func TestRunCodeCancelKillsEscapees(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	needProgram(t, "setsid")
	marker := newMarker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for len(marked(marker)) < 5 {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	res := runWith(t, ctx, RunCode(RunCodeOptions{Timeout: time.Minute}), `{"language":"bash","code":`+jsonString(escapees(marker)+"sleep 30\n")+`}`)
	wantError(t, res, "interrupted")
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("left after cancellation:%s", describe(left))
	}
}

// TestKill9RunnerKillsTool kills a runner with SIGKILL while its tool runs:
// the tool's processes, escapees included, and its supervisor are gone soon
// after.
func TestKill9RunnerKillsTool(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	needProgram(t, "setsid")
	marker := newMarker()
	runner := exec.Command(os.Args[0])
	runner.Env = append(os.Environ(), helperEnv+"=hold", helperMarker+"="+marker)
	runner.Stdout, runner.Stderr = io.Discard, io.Discard
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	defer runner.Process.Kill() //nolint:errcheck
	waitMarked(t, marker, 5, 20*time.Second)
	supervisors := childrenOf(runner.Process.Pid)
	if len(supervisors) != 1 {
		t.Fatalf("the runner has children %v, want one supervisor", supervisors)
	}
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	runner.Wait() //nolint:errcheck
	waitMarked(t, marker, 0, 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(supervisors[0], 0) == nil && parentOf(supervisors[0]) != 0 {
		if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", supervisors[0])); strings.Contains(string(stat), ") Z ") {
			break // dead, waiting to be reaped by init
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor %d is still there", supervisors[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestToolsCannotReadTheRunnersEnvironment starts a runner with a secret in
// its environment; it hides its environment and runs a tool that tries to
// read the environment and memory of all its ancestors. When the tests run
// as root it is run again as an unprivileged user.
func TestToolsCannotReadTheRunnersEnvironment(t *testing.T) {
	needProgram(t, "bash")
	check := func(t *testing.T, runner *exec.Cmd, root bool) {
		token := fmt.Sprintf("tok%016x", rand.Uint64())
		runner.Env = append(runner.Env, helperEnv+"=environ", "SECRET_TOKEN="+token)
		out, err := runner.CombinedOutput()
		if err != nil {
			t.Fatalf("runner: %v\n%s", err, out)
		}
		if bytes.Contains(out, []byte(token)) {
			t.Fatalf("the tool read the runner's secret:\n%s", out)
		}
		pid := pidIn(t, string(out))
		if !bytes.Contains(out, fmt.Appendf(nil, "ancestor %d\n", pid)) {
			t.Fatalf("the tool did not reach the runner (%d):\n%s", pid, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			name, hex, ok := strings.Cut(line, ":")
			if !ok || (name != "CapEff" && (name != "CapBnd" || !root)) {
				continue // only root cannot get capabilities back at exec
			}
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			for _, c := range droppedCaps {
				if err != nil || caps&(1<<c) != 0 {
					t.Errorf("the tool has capability %d: %s", c, line)
				}
			}
		}
		t.Logf("runner output:\n%s", out)
	}
	t.Run("same-user", func(t *testing.T) {
		runner := exec.Command(os.Args[0])
		runner.Env = os.Environ()
		check(t, runner, os.Geteuid() == 0)
	})
	t.Run("unprivileged", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the same-user case already runs unprivileged")
		}
		bin := copyExecutable(t)
		runner := exec.Command(bin)
		runner.Dir = filepath.Dir(bin)
		runner.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + filepath.Dir(bin)}
		runner.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		check(t, runner, false)
	})
}

// copyExecutable copies this test binary to a directory every user may
// read, write and run from.
func copyExecutable(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stepwise-tools-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tools.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestRunProcessSupervisorKilled: a tool that kills its own supervisor with
// SIGKILL dies with it (its parent-death signal), and the runner kills
// what is left of its process group.
func TestRunProcessSupervisorKilled(t *testing.T) {
	t.Parallel()
	marker := newMarker()
	spec := bashSpec(t, `sleep $M & sleep 0.2; kill -KILL $PPID; sleep $M`, 10*time.Second)
	spec.env = append(spec.env, "M="+marker)
	res := runProcess(context.Background(), spec)
	if res.signal != "killed" || res.timedOut || res.startErr != nil {
		t.Errorf("got exit %d signal %q timedOut %v startErr %v, want killed", res.exitCode, res.signal, res.timedOut, res.startErr)
	}
	if left := marked(marker); len(left) > 0 {
		t.Fatalf("left after the supervisor was killed:%s", describe(left))
	}
}

func TestSupervisedToolGetsOnlyItsStdio(t *testing.T) {
	t.Parallel()
	marker := newMarker()
	spec := bashSpec(t, `exec sleep $M`, 10*time.Second)
	spec.env = append(spec.env, "M="+marker)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan procResult)
	go func() { done <- runProcess(ctx, spec) }()
	waitMarked(t, marker, 1, 10*time.Second)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", marked(marker)[0]))
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range fds {
		names = append(names, fd.Name())
	}
	if strings.Join(names, " ") != "0 1 2" {
		t.Errorf("the tool's open files are %v, want 0 1 2", names)
	}
}

func TestSuperviseSignals(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	needProgram(t, "setsid")
	start := func(script string, grace time.Duration) (*exec.Cmd, string) {
		t.Helper()
		marker := newMarker()
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = []string{"PATH=" + minimalPath, "M=" + marker}
		sup, err := Supervise(cmd, &SuperviseOptions{TermGrace: grace})
		if err != nil {
			t.Fatal(err)
		}
		err = cmd.Start()
		sup.Started()
		if err != nil {
			t.Fatal(err)
		}
		waitMarked(t, marker, 2, 10*time.Second)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		return cmd, marker
	}
	exitCode := func(err error) int {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return 0
		}
		return ee.ExitCode()
	}

	// SIGTERM reaches the command, which exits at once: its status is the
	// supervisor's, and its escapee dies.
	cmd, marker := start(`trap 'exit 7' TERM; setsid sleep $M & sleep $M & wait`, time.Minute)
	if err := cmd.Wait(); exitCode(err) != 7 {
		t.Errorf("a command that exits on SIGTERM: %v, want exit status 7", err)
	}
	waitMarked(t, marker, 0, 0)

	// A command that ignores SIGTERM is killed after the grace.
	begin := time.Now()
	cmd, marker = start(`trap '' TERM; setsid sleep $M & sleep $M`, 300*time.Millisecond)
	if err := cmd.Wait(); exitCode(err) != 128+9 {
		t.Errorf("a command that ignores SIGTERM: %v, want exit status 137 (SIGKILL)", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("took %s with a grace of 300ms", d)
	}
	waitMarked(t, marker, 0, 0)
}

func TestSuperviseRefuses(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if _, err := Supervise(cmd, nil); err == nil {
		t.Error("Supervise accepted a command with SysProcAttr")
	}
	if _, err := Supervise(exec.Command("stepwise-no-such-program"), nil); err == nil {
		t.Error("Supervise accepted a command that cannot be found")
	}
}

// BenchmarkRunProcess measures what the supervisor costs a call: `true`
// started directly in its own process group (the exec runProcess did
// before, without its pipes), and through runProcess.
func BenchmarkRunProcess(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(path)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("supervised", func(b *testing.B) {
		spec := procSpec{path: path, env: []string{"PATH=" + minimalPath}, timeout: 10 * time.Second, maxOutput: 1 << 10}
		for b.Loop() {
			if res := runProcess(context.Background(), spec); res.exitCode != 0 {
				b.Fatalf("%+v", res)
			}
		}
	})
}
