package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
	"github.com/stepwise-agent/stepwise/store"
)

// chargeAgent writes an agent whose model asks for an external approval,
// then calls charge, a non-idempotent command tool that logs each run to
// $CHARGE_LOG and then waits until the file $CHARGE_RELEASE exists, then
// answers. With approve false the model calls charge at once.
func chargeAgent(t *testing.T, approve bool) string {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	if approve {
		script.WriteString(`{"tool_calls": [{"id": "ap1", "name": "approve", "arguments": {"amount": 42}}]}` + "\n")
	}
	script.WriteString(`{"tool_calls": [{"id": "ch1", "name": "charge", "arguments": {"amount": 42}}]}` + "\n")
	script.WriteString(`{"text": "charged"}` + "\n")
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(script.String()), 0o644)
	agentFile := `name = "charger"
[models.primary]
provider = "script"
script = "script.jsonl"
[[tools]]
name = "approve"
mode = "external"
parameters = '{"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}'
[[tools]]
name = "charge"
command = ["sh", "-c", "echo charge >> \"$CHARGE_LOG\"; while [ ! -e \"$CHARGE_RELEASE\" ]; do sleep 0.02; done; echo charged {{amount}}"]
env = ["CHARGE_LOG", "CHARGE_RELEASE"]
timeout = "60s"
parameters = '{"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}'
`
	path := filepath.Join(dir, "agent.toml")
	os.WriteFile(path, []byte(agentFile), 0o644)
	return path
}

// interruptedRun leaves a run of agentFile interrupted with its charge call
// pending and never started: the model's reply is checkpointed, and the
// process is interrupted before the tool starts.
func interruptedRun(t *testing.T, db, agentFile string) string {
	t.Helper()
	spec, err := agent.Load(agentFile)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := spec.Build(context.Background(), agent.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := openDB(db, false, store.DurabilityFull)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	model := ag.Models[core.Primary]
	ag.Models[core.Primary] = modelThen{model, cancel}
	out, err := shell.NewRunner(st, nil).Start(ctx, ag, "charge me")
	if err != nil || out.Status != store.StatusInterrupted {
		t.Fatalf("interrupted run: %+v %v", out, err)
	}
	rec, _ := st.LoadLatest(context.Background(), out.RunID)
	if a, ok := rec.Action.(core.RequestToolCalls); !ok || a.Calls[0].Name != "charge" {
		t.Fatalf("pending: %s", core.DescribeAction(rec.Action))
	}
	if in, _ := st.Intents(context.Background(), out.RunID, rec.Seq); len(in) != 0 {
		t.Fatalf("the charge started: %+v", in)
	}
	return out.RunID
}

// modelThen answers from a model, then cancels the run's context.
type modelThen struct {
	shell.ModelProvider
	cancel func()
}

func (m modelThen) Complete(ctx context.Context, req shell.ModelRequest) (core.ModelReply, error) {
	r, err := m.ModelProvider.Complete(ctx, req)
	m.cancel()
	return r, err
}

// TestRacingResumersOneDrives: 8 concurrent `stepwise resume` of one run
// with a non-idempotent call pending (a paused run answered with
// --results, or an interrupted one), 100 times: each time exactly one
// process runs the call and completes the run, and the other 7 exit 6.
func TestRacingResumersOneDrives(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 800 processes")
	}
	dir := t.TempDir()
	raceResumers(t, 100, func(trial int) string { return filepath.Join(dir, fmt.Sprintf("t%d.db", trial)) })
}

// raceResumers runs the racing resumers' trials, each on the database
// dbFor(trial) gives.
func raceResumers(t *testing.T, trials int, dbFor func(trial int) string) {
	dir := t.TempDir()
	pausedAgent, interruptedAgent := chargeAgent(t, true), chargeAgent(t, false)
	results := filepath.Join(dir, "approve.json")
	os.WriteFile(results, []byte(`[{"tool_call_id": "ap1", "result": "approved"}]`), 0o644)
	const racers = 8
	for trial := range trials {
		db := dbFor(trial)
		log, release := filepath.Join(dir, fmt.Sprintf("t%d.log", trial)), filepath.Join(dir, fmt.Sprintf("t%d.release", trial))
		var id string
		args := []string{"resume"}
		if trial%2 == 0 {
			r := cli(t, db, "", "run", pausedAgent, "charge me", "--json")
			want(t, r, exitPaused)
			id = decodeOutcome(t, r).RunID
			args = append(args, id, "--results", results)
		} else {
			id = interruptedRun(t, db, interruptedAgent)
			args = append(args, id)
		}
		type exit struct {
			code   int
			stderr string
		}
		exits := make(chan exit, racers)
		for range racers {
			cmd := exec.Command(binary, append(args, "--quiet")...)
			cmd.Env = append(os.Environ(), "STEPWISE_DB="+db, "CHARGE_LOG="+log, "CHARGE_RELEASE="+release)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				err := cmd.Wait()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				exits <- exit{code, stderr.String()}
			}()
		}
		// The winner waits in the charge until the losers are done.
		counts := map[int]int{}
		for i := range racers {
			if i == racers-1 {
				os.WriteFile(release, nil, 0o644)
			}
			select {
			case e := <-exits:
				counts[e.code]++
				if e.code == exitBusy && !strings.Contains(e.stderr, "pid ") && !strings.Contains(e.stderr, "already answered") {
					t.Errorf("trial %d: a busy exit that does not name the holder: %s", trial, e.stderr)
				}
				if e.code != exitBusy && e.code != exitCompleted {
					t.Fatalf("trial %d: exit %d: %s", trial, e.code, e.stderr)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("trial %d: a resumer hangs (exits so far %v)", trial, counts)
			}
		}
		data, _ := os.ReadFile(log)
		if n := strings.Count(string(data), "charge"); n != 1 || counts[exitCompleted] != 1 || counts[exitBusy] != racers-1 {
			t.Fatalf("trial %d: the charge ran %d times; exits %v", trial, n, counts)
		}
		if status, _ := finalConversation(t, db); status != "completed" {
			t.Fatalf("trial %d: status %s", trial, status)
		}
	}
}

// TestAStoppedDriverLosesItsRun: a driver stopped (SIGSTOP) past its lease
// loses the run to another resumer, which finishes it; continued
// (SIGCONT), the first writes nothing and runs nothing, and exits 6.
// waitChargeAgent writes, in dir, an agent called name whose scripted
// model calls "wait" (which marks $STOP_DIR/waiting and waits for
// $STOP_DIR/go), then "charge" (which journals a charge in
// $STOP_DIR/charges), then answers; it returns the agent file's path.
func waitChargeAgent(t *testing.T, dir, name string) string {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(`{"tool_calls": [{"id": "w1", "name": "wait", "arguments": {}}]}
{"tool_calls": [{"id": "ch1", "name": "charge", "arguments": {}}]}
{"text": "done"}
`), 0o644)
	agentFile := filepath.Join(dir, "agent.toml")
	os.WriteFile(agentFile, []byte(`name = "`+name+`"
[models.primary]
provider = "script"
script = "script.jsonl"
[[tools]]
name = "wait"
idempotent = true
command = ["sh", "-c", "touch \"$STOP_DIR/waiting\"; while [ ! -e \"$STOP_DIR/go\" ]; do sleep 0.02; done; echo waited"]
env = ["STOP_DIR"]
timeout = "60s"
[[tools]]
name = "charge"
command = ["sh", "-c", "echo charge >> \"$STOP_DIR/charges\"; echo charged"]
env = ["STOP_DIR"]
`), 0o644)
	return agentFile
}

func TestAStoppedDriverLosesItsRun(t *testing.T) {
	dir := t.TempDir()
	agentFile := waitChargeAgent(t, dir, "stopper")
	db := filepath.Join(dir, "stop.db")
	env := append(os.Environ(), "STEPWISE_DB="+db, "STOP_DIR="+dir, "STEPWISE_LEASE_TTL=600ms")
	first := exec.Command(binary, "run", agentFile, "go", "--quiet")
	first.Env = env
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "waiting")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first driver never reached its tool: %s", firstErr.String())
		}
	}
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	id := runID(t, db)
	// While its lease is live, a resumer is refused at once.
	r := cli(t, db, "", "resume", id)
	want(t, r, exitBusy, "resume while held")
	if !strings.Contains(r.stderr, fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Fatalf("busy message does not name the holder: %s", r.stderr)
	}
	// Past its lease (the process is alive but stopped), the next
	// resumer takes over and finishes the run.
	time.Sleep(900 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	second := exec.Command(binary, "resume", id, "--quiet", "--wait", "5s")
	second.Env = env
	if out, err := second.CombinedOutput(); err != nil {
		t.Fatalf("the second driver: %v\n%s", err, out)
	}
	var before bytes.Buffer
	exportRun(t, db, id, &before)
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := first.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitBusy {
		t.Fatalf("the stopped driver, continued: %v, want exit %d\n%s", err, exitBusy, firstErr.String())
	}
	if !strings.Contains(firstErr.String(), "lease") {
		t.Errorf("no word of the lost lease: %s", firstErr.String())
	}
	var after bytes.Buffer
	exportRun(t, db, id, &after)
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the driver that lost its lease wrote to the run")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "charges")); strings.Count(string(data), "charge") != 1 {
		t.Fatalf("the charge ran %d times", strings.Count(string(data), "charge"))
	}
	if status, _ := finalConversation(t, db); status != "completed" {
		t.Fatalf("status %s", status)
	}
}

func exportRun(t *testing.T, db, id string, w *bytes.Buffer) {
	t.Helper()
	r := cli(t, db, "", "export", id)
	want(t, r, 0, "export")
	w.WriteString(r.stdout)
}
