package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/mcptest"
	"github.com/stepwise-agent/stepwise/shell"
)

// memServer serves mcptest in-process; every (re)start is a new session.
// Its crash tool breaks the current connection, as a server exiting would.
type memServer struct {
	srv    *mcp.Server
	starts atomic.Int32

	mu   sync.Mutex
	conn mcp.Connection // the client side of the latest session
}

func (s *memServer) transport(ServerConfig) (mcp.Transport, error) {
	s.starts.Add(1)
	client, server := mcp.NewInMemoryTransports()
	if _, err := s.srv.Connect(context.Background(), server, nil); err != nil {
		return nil, err
	}
	return &crashable{Transport: client, s: s}, nil
}

func (s *memServer) crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.Close()
}

type crashable struct {
	mcp.Transport
	s *memServer
}

func (c *crashable) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	c.s.mu.Lock()
	c.s.conn = conn
	c.s.mu.Unlock()
	return conn, err
}

// newMem returns a manager of in-process servers, closed at the end of the test.
func newMem(t *testing.T, cfgs ...ServerConfig) (*Manager, *memServer) {
	t.Helper()
	ms := &memServer{}
	ms.srv = mcptest.NewServer(&mcptest.Options{Crash: ms.crash})
	for i := range cfgs {
		if cfgs[i].Command == "" && cfgs[i].URL == "" {
			cfgs[i].Command = "in-memory"
		}
	}
	m, err := NewManager(cfgs, &Options{Transport: ms.transport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m, ms
}

func toolMap(t *testing.T, m *Manager) (map[string]shell.Tool, []string) {
	t.Helper()
	tools, warnings, err := m.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	byName := map[string]shell.Tool{}
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl
	}
	return byName, warnings
}

func names(tools map[string]shell.Tool) []string {
	var out []string
	for n := range tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func run(t *testing.T, tl shell.Tool, args string) core.ToolResult {
	t.Helper()
	return tl.Run(context.Background(), core.ToolCall{ID: "c1", Name: tl.Spec().Name, Args: json.RawMessage(args)}, shell.RunContext{})
}

func TestToolsListing(t *testing.T) {
	m, _ := newMem(t, ServerConfig{Name: "t", Idempotent: true})
	tools, warnings := toolMap(t, m)
	var want []string
	for _, n := range mcptest.ToolNames {
		if n != "unsupported" {
			want = append(want, "t__"+n)
		}
	}
	if got := names(tools); !slices.Equal(got, want) {
		t.Fatalf("tools (%d pages of %d) = %v, want %v", (len(mcptest.ToolNames)+3)/mcptest.DefaultPageSize, mcptest.DefaultPageSize, got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `tool "unsupported" skipped`) || !strings.Contains(warnings[0], `keyword "not"`) {
		t.Fatalf("warnings = %q", warnings)
	}
	cfg := core.DefaultConfig()
	cfg.Tools = ToolSpecs(slices.Collect(func(yield func(shell.Tool) bool) {
		for _, n := range want {
			if !yield(tools[n]) {
				return
			}
		}
	}))
	for _, s := range cfg.Tools {
		if s.Mode != core.ModeMCP || !s.Idempotent || s.Description == "" {
			t.Errorf("spec %+v: want mode mcp, idempotent, a description", s)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the core refuses the listed tools: %v", err)
	}
	add := tools["t__add"].Spec()
	if got := string(add.Parameters); !strings.Contains(got, `"required":["a","b"]`) || !strings.Contains(got, `"a":{"description":"the first addend","type":"integer"}`) {
		t.Errorf("add parameters = %s", got)
	}
}

func TestAllowDeny(t *testing.T) {
	m, _ := newMem(t,
		ServerConfig{Name: "a", Allow: []string{"echo", "add", "missing", "unsupported"}},
		ServerConfig{Name: "d", Deny: []string{"crash", "sleep", "spawn", "unsupported"}},
	)
	tools, warnings := toolMap(t, m)
	var want []string
	for _, n := range mcptest.ToolNames {
		if !slices.Contains([]string{"crash", "sleep", "spawn", "unsupported"}, n) {
			want = append(want, "d__"+n)
		}
	}
	want = append(want, "a__add", "a__echo")
	slices.Sort(want)
	if got := names(tools); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], `"unsupported" skipped`) || !strings.Contains(warnings[1], `allow names tool "missing"`) {
		t.Fatalf("warnings = %q", warnings)
	}
}

func TestCalls(t *testing.T) {
	m, _ := newMem(t, ServerConfig{Name: "t"})
	tools, _ := toolMap(t, m)
	tests := []struct {
		tool, args string
		want       core.ToolResult
	}{
		{"echo", `{"text":"hello"}`, core.ToolResult{Output: "hello"}},
		{"add", `{"a":2,"b":40}`, core.ToolResult{Output: "42"}},
		{"fail", `{"message":"no luck"}`, core.ToolResult{Error: "no luck"}},
		{"image", ``, core.ToolResult{Output: fmt.Sprintf("a pixel:\n[image/png content, %d bytes]", len(mcptest.PNG))}},
		{"structured", `{}`, core.ToolResult{Output: `{"answer":42}`}},
		{"resource", `null`, core.ToolResult{
			Output:  "[resource file:///notes.txt]\nsome notes\n[resource file:///blob.bin: application/octet-stream content, 3 bytes]\n[resource link https://example.com/doc (doc)]",
			Sources: []string{"file:///notes.txt", "file:///blob.bin", "https://example.com/doc"},
		}},
		{"refs", `{"owner":{"name":"Ada"}}`, core.ToolResult{Output: `{"owner":{"name":"Ada"}}`}},
		{"nested", `{"title":"t","point":{"x":1,"y":2}}`, core.ToolResult{Output: `{"title":"t","point":{"x":1,"y":2}}`}},
		{"add", `{"a":"two"}`, core.ToolResult{Error: "validating"}},
		{"echo", `[1]`, core.ToolResult{Error: "arguments must be a JSON object"}},
	}
	for _, tt := range tests {
		got := run(t, tools["t__"+tt.tool], tt.args)
		if got.CallID != "c1" {
			t.Errorf("%s: CallID = %q", tt.tool, got.CallID)
		}
		got.CallID = ""
		if tt.want.Error != "" && strings.Contains(got.Error, tt.want.Error) {
			continue
		}
		if got.Output != tt.want.Output || got.Error != tt.want.Error || !slices.Equal(got.Sources, tt.want.Sources) {
			t.Errorf("%s(%s) = %+v, want %+v", tt.tool, tt.args, got, tt.want)
		}
	}
}

// A call that times out is cancelled, not the server killed: the server
// stops the call, keeps its session, and timeouts use up no restarts.
func TestTimeoutCancels(t *testing.T) {
	m, ms := newMem(t, ServerConfig{Name: "t", Timeout: 50 * time.Millisecond, MaxRestarts: 1})
	tools, _ := toolMap(t, m)
	for range 3 {
		start := time.Now()
		res := run(t, tools["t__sleep"], `{"ms":5000}`)
		if !strings.Contains(res.Error, "timed out after 50ms and was cancelled") || !strings.Contains(res.Error, "keeps running") || !res.Transient || time.Since(start) > 2*time.Second {
			t.Fatalf("sleep past the timeout = %+v after %s", res, time.Since(start))
		}
	}
	eventually(t, "the server saw 3 cancellations", func() bool { return run(t, tools["t__cancellations"], `{}`).Output == "3" })
	if res := run(t, tools["t__echo"], `{"text":"back"}`); res.Output != "back" {
		t.Fatalf("echo after timeouts = %+v", res)
	}
	if n := ms.starts.Load(); n != 1 {
		t.Fatalf("starts = %d, want 1 (no restart after a timeout)", n)
	}
}

func TestCrashRestartsBounded(t *testing.T) {
	m, ms := newMem(t, ServerConfig{Name: "t", MaxRestarts: 1})
	tools, _ := toolMap(t, m)
	if res := run(t, tools["t__crash"], `{}`); !strings.Contains(res.Error, "it is restarted for the next call") {
		t.Fatalf("crash = %+v", res)
	}
	if res := run(t, tools["t__echo"], `{"text":"again"}`); res.Output != "again" {
		t.Fatalf("echo after a crash = %+v", res)
	}
	if res := run(t, tools["t__crash"], `{}`); !strings.Contains(res.Error, "it is not restarted again (1 restarts allowed)") {
		t.Fatalf("second crash = %+v", res)
	}
	start := time.Now()
	res := run(t, tools["t__echo"], `{"text":"no"}`)
	if !strings.Contains(res.Error, "not started again after 1 restarts") || !strings.Contains(res.Error, "last failure") || time.Since(start) > time.Second {
		t.Fatalf("echo after the last restart = %+v", res)
	}
	if n := ms.starts.Load(); n != 2 {
		t.Fatalf("starts = %d, want 2", n)
	}
}

func TestNoRestarts(t *testing.T) {
	m, ms := newMem(t, ServerConfig{Name: "t", MaxRestarts: -1})
	tools, _ := toolMap(t, m)
	run(t, tools["t__crash"], `{}`)
	if res := run(t, tools["t__echo"], `{"text":"x"}`); !strings.Contains(res.Error, "not started again after 0 restarts") {
		t.Fatalf("echo = %+v", res)
	}
	if n := ms.starts.Load(); n != 1 {
		t.Fatalf("starts = %d, want 1", n)
	}
}

func TestToolErrorsKeepTheSession(t *testing.T) {
	m, ms := newMem(t, ServerConfig{Name: "t"})
	tools, _ := toolMap(t, m)
	run(t, tools["t__fail"], `{}`)
	// An unknown tool is a JSON-RPC error response: the server answered.
	ghost := &tool{spec: core.Tool{Name: "t__ghost"}, remote: "ghost", srv: m.servers[0]}
	if res := run(t, ghost, `{}`); !strings.Contains(res.Error, "refused the call") {
		t.Fatalf("unknown tool = %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	res := tools["t__sleep"].Run(ctx, core.ToolCall{ID: "c", Args: json.RawMessage(`{"ms":5000}`)}, shell.RunContext{})
	if !strings.Contains(res.Error, "interrupted") {
		t.Fatalf("cancelled call = %+v", res)
	}
	if res := run(t, tools["t__echo"], `{"text":"ok"}`); res.Output != "ok" {
		t.Fatalf("echo = %+v", res)
	}
	if n := ms.starts.Load(); n != 1 {
		t.Fatalf("starts = %d, want 1: tool errors and interruptions are not server failures", n)
	}
}

func TestParallelCalls(t *testing.T) {
	m, _ := newMem(t, ServerConfig{Name: "t"}, ServerConfig{Name: "u"})
	tools, _ := toolMap(t, m)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			name := []string{"t__add", "u__add"}[i%2]
			res := run(t, tools[name], fmt.Sprintf(`{"a":%d,"b":1}`, i))
			if res.Output != fmt.Sprint(i+1) {
				t.Errorf("%s = %+v", name, res)
			}
		})
	}
	wg.Wait()
}

func TestLazyStartAndClose(t *testing.T) {
	m, ms := newMem(t, ServerConfig{Name: "t"})
	if n := ms.starts.Load(); n != 0 {
		t.Fatalf("started %d servers before they were needed", n)
	}
	specs := []core.Tool{{Name: "t__echo", Mode: core.ModeMCP}}
	tools, err := m.Bind(Record{Tools: specs})
	if err != nil {
		t.Fatal(err)
	}
	if n := ms.starts.Load(); n != 0 {
		t.Fatalf("Bind started %d servers", n)
	}
	if res := run(t, tools[0], `{"text":"bound"}`); res.Output != "bound" {
		t.Fatalf("bound echo = %+v", res)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if res := run(t, tools[0], `{"text":"x"}`); !strings.Contains(res.Error, ErrClosed.Error()) {
		t.Fatalf("call after Close = %+v", res)
	}
	if _, _, err := m.Tools(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Tools after Close: %v", err)
	}
}

func TestBindErrors(t *testing.T) {
	m, _ := newMem(t, ServerConfig{Name: "t", Deny: []string{"crash"}})
	_, err := m.Bind(Record{Tools: []core.Tool{{Name: "t__crash"}, {Name: "x__echo"}, {Name: "plain"}}})
	for _, want := range []string{`"t__crash": mcp server t does not expose "crash"`, `"x__echo": no configured mcp server`, `"plain": no configured`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Bind error %v does not contain %q", err, want)
		}
	}
}

func TestStartFailure(t *testing.T) {
	m, err := NewManager([]ServerConfig{{Name: "t", Command: "x"}}, &Options{
		Transport: func(ServerConfig) (mcp.Transport, error) { return nil, errors.New("no route") },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, _, err := m.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "mcp server t: no route") {
		t.Fatalf("Tools: %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg ServerConfig
		err string
	}{
		{ServerConfig{Name: "fs", Command: "mcp-fs", Args: []string{"/"}, Env: map[string]string{"A_1": "x"}}, ""},
		{ServerConfig{Name: "gh-2_x", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}, Allow: []string{"a"}}, ""},
		{ServerConfig{Name: "", Command: "x"}, "name"},
		{ServerConfig{Name: "a__b", Command: "x"}, "name"},
		{ServerConfig{Name: "_a", Command: "x"}, "name"},
		{ServerConfig{Name: "a.b", Command: "x"}, "name"},
		{ServerConfig{Name: strings.Repeat("a", 33), Command: "x"}, "name"},
		{ServerConfig{Name: "a"}, "set command (stdio) or url"},
		{ServerConfig{Name: "a", Command: "x", URL: "http://h"}, "not both"},
		{ServerConfig{Name: "a", URL: "ftp://h"}, "http or https"},
		{ServerConfig{Name: "a", URL: "http://h", Env: map[string]string{"A": "b"}}, "command servers only"},
		{ServerConfig{Name: "a", Command: "x", Headers: map[string]string{"A": "b"}}, "url servers only"},
		{ServerConfig{Name: "a", URL: "http://h", Headers: map[string]string{"Bad Name": "b"}}, "header name"},
		{ServerConfig{Name: "a", URL: "http://h", Headers: map[string]string{"X": "b\r\nY: z"}}, "line break"},
		{ServerConfig{Name: "a", Command: "x", Env: map[string]string{"1A": "b"}}, "env name"},
		{ServerConfig{Name: "a", Command: "x", Allow: []string{"a"}, Deny: []string{"b"}}, "allow or deny, not both"},
		{ServerConfig{Name: "a", Command: "x", Timeout: -1}, "timeout is negative"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.err)
		}
	}
	if _, err := NewManager([]ServerConfig{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}, nil); err == nil || !strings.Contains(err.Error(), "duplicate name") {
		t.Errorf("duplicate names: %v", err)
	}
}

func TestToolNames(t *testing.T) {
	if got := ToolName("fs", "read_file"); got != "fs__read_file" {
		t.Fatalf("ToolName = %q", got)
	}
	for name, want := range map[string][2]string{"fs__read_file": {"fs", "read_file"}, "a__b__c": {"a", "b__c"}} {
		s, tl, ok := SplitToolName(name)
		if !ok || s != want[0] || tl != want[1] {
			t.Errorf("SplitToolName(%q) = %q, %q, %v", name, s, tl, ok)
		}
	}
	for _, name := range []string{"plain", "__x", "x__"} {
		if _, _, ok := SplitToolName(name); ok {
			t.Errorf("SplitToolName(%q) ok", name)
		}
	}
}
