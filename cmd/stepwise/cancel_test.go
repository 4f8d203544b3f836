package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelCommand: `stepwise cancel` ends a paused run at once, a run
// another process is driving (its tool call cut short) within the wait,
// and refuses an ended or unknown run with the documented exit codes.
func TestCancelCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	// A paused run: cancelled at once.
	r := cli(t, db, "", "run", "testdata/agents/external.toml", "Buy a desk lamp", "--json")
	want(t, r, exitPaused)
	paused := decodeOutcome(t, r).RunID
	r = cli(t, db, "", "cancel", paused, "--reason", "not needed", "--json")
	want(t, r, 0)
	if o := decodeOutcome(t, r); o.Status != "cancelled" || !strings.Contains(o.Error, "not needed") {
		t.Fatalf("cancelled paused run: %+v", o)
	}
	want(t, cli(t, db, "", "cancel", paused), exitFailed) // already ended
	want(t, cli(t, db, "", "cancel", "nope"), exitUsage)

	// A run another process drives, in the middle of a slow tool.
	os.WriteFile(filepath.Join(dir, "script.jsonl"), []byte(`{"tool_calls": [{"id": "s1", "name": "slow", "arguments": {}}]}`+"\n"+`{"text": "done"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "slow.toml"), []byte(`name = "slow"
[models.primary]
provider = "script"
script = "script.jsonl"
[[tools]]
name = "slow"
command = ["sh", "-c", "echo started > \"$SLOW_LOG\"; sleep 60"]
env = ["SLOW_LOG"]
timeout = "120s"
idempotent = true
`), 0o644)
	log := filepath.Join(dir, "slow.log")
	driver := exec.Command(binary, "run", filepath.Join(dir, "slow.toml"), "go", "--json")
	driver.Env = append(os.Environ(), "STEPWISE_DB="+db, "STEPWISE_LEASE_TTL=600ms", "SLOW_LOG="+log)
	var out strings.Builder
	driver.Stdout = &out
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	defer driver.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(log); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow tool did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var listed struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	ls := cli(t, db, "", "ls", "--status", "running", "--json")
	want(t, ls, 0)
	if err := json.Unmarshal([]byte(ls.stdout), &listed); err != nil || len(listed.Runs) != 1 {
		t.Fatalf("ls: %s %v", ls.stdout, err)
	}
	t0 := time.Now()
	r = cli(t, db, "", "cancel", listed.Runs[0].ID, "--wait", "20s")
	want(t, r, 0)
	waited := make(chan error, 1)
	go func() { waited <- driver.Wait() }()
	select {
	case err := <-waited:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitFailed || ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("the driver exited %v: %s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the driver did not end")
	}
	if o := decodeOutcome(t, result{stdout: out.String()}); o.Status != "cancelled" {
		t.Fatalf("the driver's outcome: %+v", o)
	}
	if time.Since(t0) > 50*time.Second {
		t.Fatal("the sleeping tool was not cut short")
	}
}
