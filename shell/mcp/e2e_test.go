package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/internal/mcptest"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// serverBinary builds cmd/mcptestserver once per test binary.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "mcptest"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "mcptestserver")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/stepwise-agent/stepwise/internal/mcptest/cmd/mcptestserver").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("build mcptestserver: %v", buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// gone reports whether pid no longer names a live process: it does not
// exist, or it is a zombie whose parent is not us (init reaps it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 1 && fields[0] == "Z" && fields[1] != strconv.Itoa(os.Getpid())
}

// reaped reports whether pid is fully gone: not even a zombie of ours.
func reaped(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStdioEndToEnd(t *testing.T) {
	bin := serverBinary(t)
	t.Setenv("STEPWISE_MCP_SECRET", "leaked")
	m, err := NewManager([]ServerConfig{{
		Name: "srv", Command: bin, Env: map[string]string{"GREETING": "hi"},
		Timeout: 300 * time.Millisecond, CancelGrace: 200 * time.Millisecond,
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tools, _ := toolMap(t, m)
	if len(tools) != len(mcptest.ToolNames)-1 {
		t.Fatalf("tools = %v", names(tools))
	}
	pid := func() int {
		t.Helper()
		res := run(t, tools["srv__pid"], `{}`)
		n, err := strconv.Atoi(res.Output)
		if err != nil {
			t.Fatalf("pid = %+v", res)
		}
		return n
	}

	if res := run(t, tools["srv__add"], `{"a":1,"b":2}`); res.Output != "3" {
		t.Fatalf("add = %+v", res)
	}
	if res := run(t, tools["srv__getenv"], `{"name":"GREETING"}`); res.Output != "hi" {
		t.Fatalf("getenv GREETING = %+v", res)
	}
	if res := run(t, tools["srv__getenv"], `{"name":"STEPWISE_MCP_SECRET"}`); res.Output != "" || res.Error != "" {
		t.Fatalf("getenv of a parent variable = %+v, want it not inherited", res)
	}

	// A crash is a tool error; the next call starts a new process.
	first := pid()
	if res := run(t, tools["srv__crash"], `{}`); !strings.Contains(res.Error, "restarted for the next call") {
		t.Fatalf("crash = %+v", res)
	}
	second := pid()
	if second == first {
		t.Fatalf("pid after a crash is still %d", first)
	}
	eventually(t, "reaped the crashed server", func() bool { return reaped(first) })

	// A timeout cancels the call: the server honours it (it counts the
	// cancellation), answers a ping, and keeps running, its state intact.
	for range 3 { // more timeouts than restarts allowed: none is used up
		start := time.Now()
		res := run(t, tools["srv__sleep"], `{"ms":10000}`)
		if !strings.Contains(res.Error, "timed out after 300ms and was cancelled") || !strings.Contains(res.Error, "keeps running") {
			t.Fatalf("sleep past the timeout = %+v", res)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("the timed-out call took %s", d)
		}
	}
	// (The SDK sends notifications/cancelled without waiting for it.)
	eventually(t, "the server saw 3 cancellations", func() bool { return run(t, tools["srv__cancellations"], `{}`).Output == "3" })
	if p := pid(); p != second {
		t.Fatalf("pid after timeouts is %d, want %d: the server was restarted", p, second)
	}

	// A call that ignores its cancellation and wedges the server: the ping
	// goes unanswered, so the server is stopped, and the next call starts
	// a new one.
	res := run(t, tools["srv__stuck"], `{}`)
	if !strings.Contains(res.Error, "did not answer a ping within 200ms after the cancellation, so it was stopped; it is restarted for the next call") {
		t.Fatalf("stuck = %+v", res)
	}
	third := pid()
	if third == second {
		t.Fatalf("pid after a stuck call is still %d", second)
	}
	eventually(t, "reaped the stuck server", func() bool { return reaped(second) })

	// Close leaves nothing behind: neither the server nor its children.
	res = run(t, tools["srv__spawn"], `{}`)
	child, err := strconv.Atoi(res.Output)
	if err != nil {
		t.Fatalf("spawn = %+v", res)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !reaped(third) {
		t.Fatalf("server %d is still there after Close", third)
	}
	eventually(t, "killed the server's child", func() bool { return gone(child) })
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStdioRestartsBounded(t *testing.T) {
	bin := serverBinary(t)
	m, err := NewManager([]ServerConfig{{Name: "srv", Command: bin, MaxRestarts: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tools, _ := toolMap(t, m)
	run(t, tools["srv__crash"], `{}`)
	run(t, tools["srv__crash"], `{}`)
	res := run(t, tools["srv__echo"], `{"text":"x"}`)
	if !strings.Contains(res.Error, "not started again after 1 restarts") {
		t.Fatalf("echo = %+v", res)
	}
}

// lockedBuffer is a strings.Builder safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestStdioStartFailure(t *testing.T) {
	var stderr lockedBuffer
	m, err := NewManager([]ServerConfig{
		{Name: "bad", Command: "sh", Args: []string{"-c", "echo boom >&2; exit 1"}},
		{Name: "none", Command: filepath.Join(t.TempDir(), "missing")},
	}, &Options{Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, _, err = m.Tools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "mcp server bad: start") || !strings.Contains(err.Error(), "stderr: boom") ||
		!strings.Contains(err.Error(), "mcp server none:") {
		t.Fatalf("Tools: %v", err)
	}
	if got := stderr.String(); got != "boom\n" {
		t.Fatalf("Options.Stderr got %q", got)
	}
}

func TestStreamableHTTP(t *testing.T) {
	srv := mcptest.NewServer(nil)
	var mu sync.Mutex
	var seen []string
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()

	m, err := NewManager([]ServerConfig{{
		Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer t0k"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := toolMap(t, m)
	if len(tools) != len(mcptest.ToolNames)-1 {
		t.Fatalf("tools = %v", names(tools))
	}
	if res := run(t, tools["web__echo"], `{"text":"over http"}`); res.Output != "over http" {
		t.Fatalf("echo = %+v", res)
	}
	if res := run(t, tools["web__header"], `{"name":"Authorization"}`); res.Output != "Bearer t0k" {
		t.Fatalf("header = %+v", res)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("only %d requests", len(seen))
	}
	for i, h := range seen {
		if h != "Bearer t0k" {
			t.Fatalf("request %d had Authorization %q", i, h)
		}
	}
}
