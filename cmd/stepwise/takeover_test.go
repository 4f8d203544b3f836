package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stoppedDriver starts `stepwise run` of an agent whose first tool waits
// (until the file go exists in dir) and whose second charges (a line in
// dir/charges), and stops it (SIGSTOP) in the first: an alive holder of
// this host with a live lease (an hour). It returns the process, its
// stderr and the run's id.
func stoppedDriver(t *testing.T, dir string) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	agentFile := waitChargeAgent(t, dir, "held")
	db := filepath.Join(dir, "held.db")
	first := exec.Command(binary, "run", agentFile, "go", "--quiet")
	first.Env = append(os.Environ(), "STEPWISE_DB="+db, "STOP_DIR="+dir, "STEPWISE_LEASE_TTL=1h")
	var stderr bytes.Buffer
	first.Stderr = &stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Process.Kill() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "waiting")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the driver never reached its tool: %s", stderr.String())
		}
	}
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return first, &stderr, runID(t, db)
}

// TestResumeTakeOver: `resume --take-over` takes a run from a live holder
// (stopped, its lease an hour long), warning on stderr with the holder's
// pid, and finishes it; the take-over shows in `show`; the former holder,
// continued, writes nothing, charges nothing, and exits 6.
func TestResumeTakeOver(t *testing.T) {
	dir := t.TempDir()
	first, firstErr, id := stoppedDriver(t, dir)
	db := filepath.Join(dir, "held.db")
	want(t, cli(t, db, "", "resume", id), exitBusy, "resume while held")
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	op := exec.Command(binary, "resume", id, "--take-over", "--quiet")
	op.Env = append(os.Environ(), "STEPWISE_DB="+db, "STOP_DIR="+dir)
	var opErr bytes.Buffer
	op.Stderr = &opErr
	if err := op.Run(); err != nil {
		t.Fatalf("resume --take-over: %v\n%s", err, opErr.String())
	}
	if !strings.Contains(opErr.String(), "warning") || !strings.Contains(opErr.String(), fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Fatalf("no warning naming the holder: %s", opErr.String())
	}
	r := cli(t, db, "", "show", id)
	want(t, r, 0, "show")
	if !strings.Contains(r.stdout, "taken over: ") || !strings.Contains(r.stdout, "stepwise resume --take-over") {
		t.Fatalf("show does not list the take-over:\n%s", r.stdout)
	}
	var before bytes.Buffer
	exportRun(t, db, id, &before)
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := first.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitBusy {
		t.Fatalf("the former holder, continued: %v, want exit %d\n%s", err, exitBusy, firstErr.String())
	}
	var after bytes.Buffer
	exportRun(t, db, id, &after)
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the former holder wrote to the run")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "charges")); strings.Count(string(data), "charge") != 1 {
		t.Fatalf("the charge ran %d times", strings.Count(string(data), "charge"))
	}
	if status, _ := finalConversation(t, db); status != "completed" {
		t.Fatalf("status %s", status)
	}
}

// TestCancelTakeOver: `cancel --take-over` cancels at once a run a live
// holder drives (stopped, so it would never act on a request), warning
// with the holder's pid; `show --json` lists the take-over; the former
// holder, continued, writes nothing and exits 6.
func TestCancelTakeOver(t *testing.T) {
	dir := t.TempDir()
	first, firstErr, id := stoppedDriver(t, dir)
	db := filepath.Join(dir, "held.db")
	r := cli(t, db, "", "cancel", id, "--take-over", "--reason", "operator says stop")
	want(t, r, 0, "cancel --take-over")
	if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Fatalf("no warning naming the holder: %s", r.stderr)
	}
	r = cli(t, db, "", "show", id, "--json")
	want(t, r, 0, "show --json")
	if !strings.Contains(r.stdout, `"status":"cancelled"`) && !strings.Contains(r.stdout, `"status": "cancelled"`) || !strings.Contains(r.stdout, "stepwise cancel --take-over") {
		t.Fatalf("show --json:\n%s", r.stdout)
	}
	var before bytes.Buffer
	exportRun(t, db, id, &before)
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := first.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitBusy {
		t.Fatalf("the former holder, continued: %v, want exit %d\n%s", err, exitBusy, firstErr.String())
	}
	var after bytes.Buffer
	exportRun(t, db, id, &after)
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the former holder wrote to the run")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "charges")); len(data) != 0 {
		t.Fatalf("the cancelled run charged: %q", data)
	}
}
