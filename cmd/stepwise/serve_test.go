package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// served is a `stepwise serve` process.
type served struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	log  bytes.Buffer
	done chan int // its exit code
}

// startServe starts `stepwise serve` on db with the agents in dir, on a
// free loopback port, and waits until it listens.
func startServe(t testing.TB, db, dir string, env ...string) *served {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--agents", dir, "--addr", "127.0.0.1:0", "--grace", "5s")
	cmd.Env = append(append(os.Environ(), "STEPWISE_DB="+db), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{t: t, cmd: cmd, done: make(chan int, 1)}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if _, rest, ok := strings.Cut(line, "serving on "); ok {
				listening <- strings.Fields(rest)[0]
			}
		}
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -int(ws.Signal())
			}
		}
		s.done <- code
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	select {
	case url := <-listening:
		s.url = url
	case code := <-s.done:
		t.Fatalf("serve exited %d: %s", code, s.logText())
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not listen: %s", s.logText())
	}
	return s
}

func (s *served) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// call sends a request to the server and decodes its JSON answer into out.
func (s *served) call(method, path string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

type servedRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Answer string `json:"answer"`
	Holder *struct {
		Owner string `json:"owner"`
	} `json:"holder"`
}

// waitStatus polls a run until it has the status.
func (s *served) waitStatus(id, status string, within time.Duration) servedRun {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var run servedRun
		s.call("GET", "/v1/runs/"+id, nil, &run)
		if run.Status == status {
			return run
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s is %s, not %s, after %s\nserver log:\n%s", id, run.Status, status, within, s.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serveAgents writes the agents for the serve tests: "charger" calls
// charge, a non-idempotent command tool that appends to $CHARGE_LOG and
// waits for $CHARGE_RELEASE, then answers; "napper" runs a tool that
// sleeps for 0.6 s, then answers.
func serveAgents(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"charger.jsonl": `{"tool_calls": [{"id": "ch1", "name": "charge", "arguments": {"amount": 42}}]}` + "\n" + `{"text": "charged"}` + "\n",
		"charger.toml": `name = "charger"
[models.primary]
provider = "script"
script = "charger.jsonl"
[[tools]]
name = "charge"
command = ["sh", "-c", "echo charge >> \"$CHARGE_LOG\"; while [ ! -e \"$CHARGE_RELEASE\" ]; do sleep 0.02; done; echo charged {{amount}}"]
env = ["CHARGE_LOG", "CHARGE_RELEASE"]
timeout = "60s"
parameters = '{"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}'
`,
		"napper.jsonl": `{"tool_calls": [{"id": "n1", "name": "nap", "arguments": {}}]}` + "\n" + `{"text": "rested"}` + "\n",
		"napper.toml": `name = "napper"
[models.primary]
provider = "script"
script = "napper.jsonl"
[[tools]]
name = "nap"
command = ["sleep", "0.6"]
idempotent = true
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestServeSIGTERM: SIGTERM lets the step in flight finish, hands the run
// back and exits 0; another server finishes the run.
func TestServeSIGTERM(t *testing.T) {
	db := filepath.Join(t.TempDir(), "serve.db")
	dir := serveAgents(t)
	a := startServe(t, db, dir)
	var run servedRun
	if code := a.call("POST", "/v1/runs", map[string]any{"agent": "napper", "input": "nap"}, &run); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	time.Sleep(200 * time.Millisecond) // the nap is running
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case code := <-a.done:
		if code != 0 {
			t.Fatalf("serve exited %d after SIGTERM:\n%s", code, a.logText())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not exit after SIGTERM:\n%s", a.logText())
	}
	// The nap's step was checkpointed before the exit; the run is free.
	out := cli(t, db, "", "show", run.ID, "--json")
	want(t, out, 0)
	var shown struct {
		Run struct {
			StoredStatus string          `json:"stored_status"`
			Holder       json.RawMessage `json:"holder"`
		} `json:"run"`
		Steps []struct {
			Seq     int    `json:"seq"`
			Outcome string `json:"outcome"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Run.StoredStatus != "running" || string(shown.Run.Holder) != "null" || len(shown.Steps) < 3 || !strings.Contains(shown.Steps[2].Outcome, "results n1 ok") {
		t.Fatalf("after SIGTERM, the nap's result is not stored or the run not free: %s", out.stdout)
	}
	b := startServe(t, db, dir)
	if done := b.waitStatus(run.ID, "completed", 15*time.Second); done.Answer != "rested" {
		t.Fatalf("finished by the second server: %+v", done)
	}
}

// TestServersShareAPostgreSQLDatabase: two servers on one PostgreSQL
// database share the runs; one killed with SIGKILL in the middle of a
// non-idempotent call loses its run to the other once its lease expires,
// and the call's effect happens once.
func TestServersShareAPostgreSQLDatabase(t *testing.T) {
	db := pgDB(t)
	dir := serveAgents(t)
	tmp := t.TempDir()
	log, release := filepath.Join(tmp, "charge.log"), filepath.Join(tmp, "release")
	env := []string{"STEPWISE_LEASE_TTL=1s", "CHARGE_LOG=" + log, "CHARGE_RELEASE=" + release}
	a := startServe(t, db, dir, env...)
	b := startServe(t, db, dir, env...)

	// Shared work: runs created on either server complete, driven by both.
	var ids []string
	for i := range 12 {
		s := []*served{a, b}[i%2]
		var run servedRun
		if code := s.call("POST", "/v1/runs", map[string]any{"agent": "napper", "input": fmt.Sprint(i)}, &run); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
		ids = append(ids, run.ID)
	}
	for _, id := range ids {
		a.waitStatus(id, "completed", 30*time.Second)
	}
	for _, s := range []*served{a, b} {
		if !strings.Contains(s.logText(), "completed after step") {
			t.Errorf("a server drove no run:\n%s", s.logText())
		}
	}

	// The charge starts on one of them; that one is killed.
	var run servedRun
	a.call("POST", "/v1/runs", map[string]any{"agent": "charger", "input": "charge"}, &run)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if data, _ := os.ReadFile(log); strings.Count(string(data), "charge") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the charge did not start:\n%s\n%s", a.logText(), b.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var holding servedRun
	a.call("GET", "/v1/runs/"+run.ID, nil, &holding)
	victim, survivor := a, b
	if holding.Holder == nil {
		t.Fatalf("nobody holds the charging run: %+v", holding)
	}
	if !strings.Contains(a.logText(), "owner "+holding.Holder.Owner) {
		victim, survivor = b, a
	}
	victim.cmd.Process.Signal(syscall.SIGKILL)
	if code := <-victim.done; code != -int(syscall.SIGKILL) {
		t.Fatalf("the victim exited %d", code)
	}
	os.WriteFile(release, nil, 0o644) // a charge started again would finish now
	done := survivor.waitStatus(run.ID, "completed", 30*time.Second)
	if done.Answer != "charged" {
		t.Fatalf("taken over: %+v", done)
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "charge"); n != 1 {
		t.Fatalf("the charge ran %d times", n)
	}
	if !strings.Contains(survivor.logText(), run.ID) {
		t.Fatalf("the survivor did not take the run over:\n%s", survivor.logText())
	}
}

// TestPythonClient: the example client (Python, standard library only)
// drives a run with an external tool over HTTP to its end.
func TestPythonClient(t *testing.T) {
	python := requirePython(t, "examples/python/drive_external.py")
	db := filepath.Join(t.TempDir(), "serve.db")
	s := startServe(t, db, "../../testdata/agents")
	cmd := exec.Command(python, "examples/python/drive_external.py", "--url", s.url, "--agent", "external", "--input", "Buy a desk lamp")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("the client: %v\n%s\nserver:\n%s", err, errb.String(), s.logText())
	}
	if !strings.Contains(out.String(), "desk lamp") || !strings.Contains(errb.String(), "answered call_approve") {
		t.Fatalf("stdout %q\nstderr %s", out.String(), errb.String())
	}
	// Over budget: the refusal reaches the model, and the run still ends.
	cmd = exec.Command(python, "examples/python/drive_external.py", "--url", s.url, "--agent", "external", "--input", "Buy a desk lamp", "--budget", "10")
	cmd.Dir = "../.."
	out.Reset()
	errb.Reset()
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	if !strings.Contains(errb.String(), "answered call_approve") {
		t.Fatalf("over budget: %s", errb.String())
	}
}

// TestPythonChat: the example conversation client (Python, standard
// library only) holds a conversation with a run of the chat agent over
// HTTP: each message's answer in order, the second turn's after a tool
// call; then one from a message history, with messages typed on stdin,
// until the scripted model has no more replies and the run fails (exit 1).
func TestPythonChat(t *testing.T) {
	python := requirePython(t, "examples/python/chat.py")
	db := filepath.Join(t.TempDir(), "serve.db")
	s := startServe(t, db, "../../testdata/agents")
	chat := func(stdin string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(python, append([]string{"examples/python/chat.py", "--url", s.url, "--agent", "chat"}, args...)...)
		cmd.Dir = "../.."
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("the client: %v\nserver:\n%s", err, s.logText())
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	out, errs, code := chat("", "--say", "Hello", "--say", "How much is the desk lamp?", "--say", "Thanks")
	want := "Hello! I can look up office equipment prices.\nThe desk lamp costs 42.50 EUR.\nYou're welcome. Goodbye!\n"
	if code != 0 || out != want || !strings.Contains(errs, "read_file") || !strings.Contains(errs, "3 turns answered") {
		t.Fatalf("exit %d\nstdout %q\nstderr %s\nserver:\n%s", code, out, errs, s.logText())
	}
	history := filepath.Join(t.TempDir(), "history.json")
	if err := os.WriteFile(history, []byte(`[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
		{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Prices?"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = chat("How much is the desk lamp?\nThanks\nAnything else?\n", "--history", history)
	if code != 1 || out != want || !strings.Contains(errs, "failed") || !strings.Contains(errs, "no reply for model call 5") {
		t.Fatalf("from a history: exit %d\nstdout %q\nstderr %s", code, out, errs)
	}
}
