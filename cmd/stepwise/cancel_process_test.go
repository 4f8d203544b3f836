package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// TestCancelFromAnotherProcess: `stepwise run` in one process, cancelled
// by `stepwise cancel RUN` from another, in the middle of a model call
// (a scripted model that takes a minute) and of a tool call (a command
// that sleeps a minute): cancel exits 0; the driving process cuts the
// call short, exits 1 (the cancelled run's code) with the outcome
// cancelled; the run is cancelled, not interrupted, and no one holds it.
// Five times each, on SQLite and on PostgreSQL.
func TestCancelFromAnotherProcess(t *testing.T) {
	for _, db := range []struct {
		name string
		url  func(t *testing.T) string
		open func(t *testing.T, url string) store.Store
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "t.db") }, func(t *testing.T, url string) store.Store {
			st, err := sqlite.Open(url, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"postgres", pgDB, func(t *testing.T, url string) store.Store {
			st, err := postgres.Open(context.Background(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	} {
		t.Run(db.name, func(t *testing.T) {
			url := db.url(t)
			dir := t.TempDir()
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("model.jsonl", `{"text": "at last", "delay_ms": 60000}`+"\n")
			write("model.toml", "name = \"slow-model\"\n[models.primary]\nprovider = \"script\"\nscript = \"model.jsonl\"\n")
			write("tool.jsonl", `{"tool_calls": [{"id": "s1", "name": "slow", "arguments": {}}]}`+"\n"+`{"text": "done"}`+"\n")
			write("tool.toml", `name = "slow-tool"
[models.primary]
provider = "script"
script = "tool.jsonl"
[[tools]]
name = "slow"
command = ["sh", "-c", "echo started >> \"$SLOW_LOG\"; sleep 60"]
env = ["SLOW_LOG"]
timeout = "120s"
`)
			st := db.open(t, url)
			defer st.Close()
			for _, during := range []string{"model", "tool"} {
				for i := range 5 {
					cancelDuring(t, st, url, dir, during, i)
				}
			}
		})
	}
}

// cancelDuring starts `stepwise run` on the agent named during, waits
// until its model or tool call is in flight, cancels the run from another
// process, and checks how both processes end.
func cancelDuring(t *testing.T, st store.Store, db, dir, during string, i int) {
	t.Helper()
	ctx := context.Background()
	log := filepath.Join(dir, fmt.Sprintf("%s-%d.log", during, i))
	driver := exec.Command(binary, "run", filepath.Join(dir, during+".toml"), "go", "--json")
	driver.Dir = "../.."
	driver.Env = append(os.Environ(), "STEPWISE_DB="+db, "STEPWISE_LEASE_TTL=600ms", "SLOW_LOG="+log, "NO_COLOR=1")
	var out, errb strings.Builder
	driver.Stdout, driver.Stderr = &out, &errb
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	waited, exited := make(chan error, 1), make(chan struct{})
	go func() { waited <- driver.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			driver.Process.Kill()
			<-exited
		}
	}()
	agentName := map[string]string{"model": "slow-model", "tool": "slow-tool"}[during]
	var id string
	deadline := time.Now().Add(20 * time.Second)
	for id == "" {
		if time.Now().After(deadline) {
			t.Fatalf("%s #%d: the %s call did not start: %s", during, i, during, errb.String())
		}
		time.Sleep(20 * time.Millisecond)
		runs, err := st.ListRuns(ctx, store.Filter{Agent: agentName, Status: store.StatusRunning})
		if err != nil || len(runs) == 0 {
			continue
		}
		if during == "tool" {
			if _, err := os.Stat(log); err != nil {
				continue // the tool has not started yet
			}
		} else if runs[0].LastSeq < 1 || runs[0].Lease.Owner == "" {
			continue // the model call's request is not checkpointed yet
		}
		id = runs[0].ID
	}
	if during == "model" {
		time.Sleep(200 * time.Millisecond) // inside the minute-long call
	}
	t0 := time.Now()
	r := cli(t, db, "", "cancel", id, "--reason", "enough", "--wait", "20s", "--json")
	want(t, r, 0, "cancel", during)
	if o := decodeOutcome(t, r); o.Status != "cancelled" {
		t.Fatalf("%s #%d: cancel's outcome: %+v", during, i, o)
	}
	select {
	case err := <-waited:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitFailed || ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("%s #%d: the driver exited %v: %s %s", during, i, err, out.String(), errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s #%d: the driver did not end", during, i)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("%s #%d: the driver ended %s after the cancel; the call was not cut short", during, i, took)
	}
	if o := decodeOutcome(t, result{stdout: out.String()}); o.Status != "cancelled" || !strings.Contains(o.Error, "enough") {
		t.Fatalf("%s #%d: the driver's outcome: %+v", during, i, o)
	}
	info, err := st.Run(ctx, id)
	if err != nil || info.Status != store.StatusCancelled || info.Lease.Owner != "" {
		t.Fatalf("%s #%d: the run: %+v %v", during, i, info, err)
	}
}

// TestCancelAcrossServeProcesses: a run one `stepwise serve` process
// drives (a model call that takes a minute), cancelled through another
// serve process on the same database: that one answers 202 (it asked the
// driver), and the driving process cuts the call short and ends the run
// cancelled within a third of its lease (200 ms here) plus a poll; it
// stays cancelled. Five times, on SQLite and on PostgreSQL.
func TestCancelAcrossServeProcesses(t *testing.T) {
	for _, db := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "t.db") }},
		{"postgres", pgDB},
	} {
		t.Run(db.name, func(t *testing.T) {
			url := db.url(t)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "sleepy.jsonl"), []byte(`{"text": "at last", "delay_ms": 60000}`+"\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "sleepy.toml"), []byte("name = \"sleepy\"\n[models.primary]\nprovider = \"script\"\nscript = \"sleepy.jsonl\"\n"), 0o644)
			a := startServe(t, url, dir, "STEPWISE_LEASE_TTL=600ms")
			b := startServe(t, url, dir, "STEPWISE_LEASE_TTL=600ms")
			for i := range 5 {
				var run servedRun
				if code := a.call("POST", "/v1/runs", map[string]any{"agent": "sleepy", "input": "go"}, &run); code != 201 {
					t.Fatalf("#%d: create: %d", i, code)
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					var got struct {
						Steps  int `json:"steps"`
						Holder any `json:"holder"`
					}
					a.call("GET", "/v1/runs/"+run.ID, nil, &got)
					if got.Steps >= 1 && got.Holder != nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("#%d: the model call did not start: %s", i, a.logText())
					}
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond) // inside the minute-long call
				t0 := time.Now()
				var asked servedRun
				// 202: the other server drives it and was asked; 200: it
				// ended it while this server watched its holder (ADR 0027).
				if code := b.call("POST", "/v1/runs/"+run.ID+"/cancel", map[string]string{"reason": "enough"}, &asked); code != 202 &&
					(code != 200 || asked.Status != "cancelled") {
					t.Fatalf("#%d: cancel through the other server: %d %+v", i, code, asked)
				}
				a.waitStatus(run.ID, "cancelled", 3*time.Second)
				if took := time.Since(t0); took > 1500*time.Millisecond {
					t.Errorf("#%d: cancelled %s after the request", i, took)
				}
				time.Sleep(300 * time.Millisecond)
				if got := b.waitStatus(run.ID, "cancelled", 0); got.Holder != nil {
					t.Fatalf("#%d: still held after the cancel: %+v", i, got)
				}
			}
		})
	}
}
