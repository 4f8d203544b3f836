package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

const killTurns = 6

// killAgent writes an agent whose model (a script) calls a slow, idempotent
// command tool once per turn; the tool appends its argument to a log, so
// the test can count how often each call really ran.
func killAgent(t *testing.T) string { return killAgentWith(t, true) }

// killAgentWith is killAgent with the tool idempotent or not.
func killAgentWith(t *testing.T, idempotent bool) string {
	dir := t.TempDir()
	var script strings.Builder
	for i := 1; i <= killTurns; i++ {
		fmt.Fprintf(&script, `{"tool_calls": [{"id": "t%d", "name": "work", "arguments": {"x": "t%d"}}]}`+"\n", i, i)
	}
	script.WriteString(`{"text": "all work done"}` + "\n")
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(script.String()), 0o644)
	agent := `name = "killtest"
system_prompt = "Work."
[models.primary]
provider = "script"
script = "script.jsonl"
[[tools]]
name = "work"
command = ["sh", "-c", "sleep 0.05; echo {{x}} >> \"$KILLTEST_LOG\"; echo did {{x}}"]
env = ["KILLTEST_LOG"]
idempotent = ` + fmt.Sprint(idempotent) + `
parameters = '{"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}'
`
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(agent), 0o644)
	return path
}

func stepwiseCmd(db, log string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--quiet")...)
	cmd.Env = append(os.Environ(), "STEPWISE_DB="+db, "KILLTEST_LOG="+log)
	return cmd
}

// finalConversation renders a completed run's conversation.
func finalConversation(t *testing.T, db string) (string, string) {
	t.Helper()
	st, err := openDB(db, false, store.DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("want one run, got %d (%v)", len(runs), err)
	}
	rec, err := st.LoadLatest(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range rec.State.Messages {
		b.WriteString(core.DescribeMessage(m) + "\n")
	}
	return string(runs[0].Status), b.String()
}

func runID(t *testing.T, db string) string {
	st, err := openDB(db, false, store.DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		return ""
	}
	return runs[0].ID
}

// TestKill9ResumesToTheSameEnd kills a real stepwise process with SIGKILL at
// random moments, many times, resuming after each kill, and checks every run
// ends exactly like an uninterrupted one and no completed call ran twice.
func TestKill9ResumesToTheSameEnd(t *testing.T) {
	agent := killAgent(t)
	dir := t.TempDir()
	refDB, refLog := filepath.Join(dir, "ref.db"), filepath.Join(dir, "ref.log")
	if out, err := stepwiseCmd(refDB, refLog, "run", agent, "go").CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	_, want := finalConversation(t, refDB)

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	const trials = 12
	kills := 0
	for trial := 0; trial < trials; trial++ {
		db, log := filepath.Join(dir, fmt.Sprintf("t%d.db", trial)), filepath.Join(dir, fmt.Sprintf("t%d.log", trial))
		trialKills := killUntilDone(t, rng, db, log, agent, 200*time.Millisecond)
		kills += trialKills
		status, got := finalConversation(t, db)
		if status != "completed" || got != want {
			t.Fatalf("trial %d (%d kills): status %s, conversation differs:\n got:\n%s\nwant:\n%s", trial, trialKills, status, got, want)
		}
		checkToolRuns(t, trial, log, "t", killTurns, trialKills)
	}
	if kills == 0 {
		t.Fatal("no process was killed")
	}
	t.Logf("%d trials, %d kills", trials, kills)
}

// killUntilDone runs agent on db (`stepwise run AGENT go`), and after each
// kill resumes the run (its root, for a tree): the first three attempts are
// killed with SIGKILL at a random moment within the given time, unless they
// finish first; the next one must finish. It returns how many were killed.
func killUntilDone(t *testing.T, rng *rand.Rand, db, log, agent string, within time.Duration) int {
	t.Helper()
	kills := 0
	for attempt := 0; attempt <= 40; attempt++ {
		var cmd *exec.Cmd
		if id := runID(t, db); id == "" {
			cmd = stepwiseCmd(db, log, "run", agent, "go")
		} else {
			cmd = stepwiseCmd(db, log, "resume", strings.SplitN(id, ".", 2)[0])
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if kills < 3 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s: stepwise failed: %v", db, err)
				}
				return kills
			case <-time.After(time.Duration(rng.IntN(int(within.Milliseconds()))) * time.Millisecond):
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				continue
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: resume failed: %v", db, err)
		}
		return kills
	}
	t.Fatalf("%s: the run never finished", db)
	return kills
}

// checkToolRuns checks the log of a trial's tool runs: calls PREFIX1 to
// PREFIXcalls each ran, and no more often in all than once each plus once
// per kill (a kill interrupts at most the one call in flight, which runs
// again): no completed call ran twice.
func checkToolRuns(t *testing.T, trial int, log, prefix string, calls, kills int) {
	t.Helper()
	data, _ := os.ReadFile(log)
	counts := map[string]int{}
	for _, l := range strings.Fields(string(data)) {
		counts[l]++
	}
	total := 0
	for i := 1; i <= calls; i++ {
		n := counts[fmt.Sprintf("%s%d", prefix, i)]
		if n < 1 {
			t.Fatalf("trial %d: call %s%d never ran", trial, prefix, i)
		}
		total += n
	}
	if total > calls+kills {
		t.Fatalf("trial %d: %d tool runs for %d calls and %d kills: completed calls ran again (%v)", trial, total, calls, kills, counts)
	}
}

// TestSignalInterruptsAndResumeFinishes sends SIGINT and SIGTERM to a running
// stepwise: the run is checkpointed, marked interrupted (exit 4), and
// `stepwise resume` finishes it exactly like an uninterrupted run.
func TestSignalInterruptsAndResumeFinishes(t *testing.T) {
	agent := killAgent(t)
	dir := t.TempDir()
	refDB := filepath.Join(dir, "ref.db")
	if out, err := stepwiseCmd(refDB, filepath.Join(dir, "ref.log"), "run", agent, "go").CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	_, want := finalConversation(t, refDB)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		db, log := filepath.Join(dir, sig.String()+".db"), filepath.Join(dir, sig.String()+".log")
		cmd := stepwiseCmd(db, log, "run", agent, "go")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal once the run exists (the handler is installed before the run
		// is created) and is a turn or two in: each turn takes ~50 ms.
		for deadline := time.Now().Add(10 * time.Second); runID(t, db) == ""; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the run never started", sig)
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(60 * time.Millisecond)
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitInterrupted {
			t.Fatalf("%s: exit %v, want %d", sig, err, exitInterrupted)
		}
		if status, _ := finalConversation(t, db); status != "interrupted" {
			t.Fatalf("%s: status %s", sig, status)
		}
		name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]
		if !strings.Contains(stderr.String(), "was interrupted by "+name+"; continue it with") {
			t.Fatalf("%s: stderr %q", sig, stderr.String())
		}
		if out, err := stepwiseCmd(db, log, "resume", runID(t, db)).CombinedOutput(); err != nil {
			t.Fatalf("%s: resume: %v\n%s", sig, err, out)
		}
		status, got := finalConversation(t, db)
		if status != "completed" || got != want {
			t.Fatalf("%s: after resume status %s, conversation:\n%s\nwant:\n%s", sig, status, got, want)
		}
	}
}

// TestKill9NeverRepeatsANonIdempotentEffect kills a real stepwise process at
// random moments while it drives a non-idempotent tool, resuming after each
// kill: no call's effect happens twice (0 duplicated), and every effect
// that happened is accounted for in the run, as the tool's output or as
// "outcome unknown" (0 lost); a call whose effect did not happen is either
// run on resume or reported unknown, never claimed done.
func TestKill9NeverRepeatsANonIdempotentEffect(t *testing.T) {
	agent := killAgentWith(t, false)
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("seed %d", seed)
	kills, unknown := 0, 0
	for trial := 0; trial < 10; trial++ {
		db, log := filepath.Join(dir, fmt.Sprintf("n%d.db", trial)), filepath.Join(dir, fmt.Sprintf("n%d.log", trial))
		for attempt := 0; ; attempt++ {
			if attempt > 40 {
				t.Fatalf("trial %d: run never finished", trial)
			}
			cmd := stepwiseCmd(db, log, "run", agent, "go")
			if id := runID(t, db); id != "" {
				cmd = stepwiseCmd(db, log, "resume", id)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			if attempt < 3 {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("trial %d: %v", trial, err)
					}
				case <-time.After(time.Duration(rng.IntN(250)) * time.Millisecond):
					_ = cmd.Process.Signal(syscall.SIGKILL)
					<-done
					kills++
					continue
				}
			} else if err := <-done; err != nil {
				t.Fatalf("trial %d: resume: %v", trial, err)
			}
			break
		}
		status, conv := finalConversation(t, db)
		if status != "completed" {
			t.Fatalf("trial %d: status %s", trial, status)
		}
		data, _ := os.ReadFile(log)
		counts := map[string]int{}
		for _, l := range strings.Fields(string(data)) {
			counts[l]++
		}
		for i := 1; i <= killTurns; i++ {
			id := fmt.Sprintf("t%d", i)
			did := strings.Contains(conv, fmt.Sprintf("tool(%s): \"exit_code: 0", id)) || strings.Contains(conv, "did "+id)
			unknownHere := strings.Contains(conv, fmt.Sprintf("tool(%s) error: \"outcome unknown", id))
			switch n := counts[id]; {
			case n > 1:
				t.Fatalf("trial %d: the effect of %s happened %d times:\n%s", trial, id, n, conv)
			case n == 1 && !did && !unknownHere:
				t.Fatalf("trial %d: the effect of %s happened and the run does not account for it:\n%s", trial, id, conv)
			case n == 0 && !unknownHere:
				t.Fatalf("trial %d: %s never took effect and the run does not say so:\n%s", trial, id, conv)
			}
			if unknownHere {
				unknown++
			}
		}
	}
	if kills == 0 {
		t.Fatal("no process was killed")
	}
	t.Logf("%d kills, %d calls reported in doubt", kills, unknown)
}
