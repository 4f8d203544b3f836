package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/mcptest"
	"github.com/stepwise-agent/stepwise/shell"
)

// transport is a way to reach the real test server: its binary over stdio,
// or its handler over streamable HTTP, at a protocol version.
type transport struct {
	name     string
	http     bool
	protocol string // "" for the SDK's newest
}

var transports = []transport{
	{name: "stdio"},
	{name: "http", http: true},
	// Before 2026-07-28 a server's own messages come on the standalone SSE
	// stream (GET), which list changes need.
	{name: "http-2025-06-18", http: true, protocol: "2025-06-18"},
}

// real returns a manager of one server named x reached by tr, with cfg's
// other settings; it is closed at the end of the test.
func (tr transport) real(t *testing.T, cfg ServerConfig) *Manager {
	t.Helper()
	cfg.Name = "x"
	if tr.http {
		srv := mcptest.NewServer(nil)
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close) // after the manager's Close, registered below
		cfg.URL = ts.URL
	} else if cfg.Command == "" {
		cfg.Command = serverBinary(t)
	}
	m, err := NewManager([]ServerConfig{cfg}, &Options{ProtocolVersion: tr.protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func eachTransport(t *testing.T, f func(t *testing.T, tr transport)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { f(t, tr) })
	}
}

// The roots capability is declared only when roots are configured: a
// server that trusts the roots it gets would otherwise get none.
func TestRoots(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr transport) {
		tools, _ := toolMap(t, tr.real(t, ServerConfig{}))
		if res := run(t, tools["x__roots"], `{}`); res.Output != "the client declares no roots capability" {
			t.Fatalf("roots without any configured = %+v", res)
		}
		tools, _ = toolMap(t, tr.real(t, ServerConfig{Roots: []string{"file:///srv/data", "file:///tmp/work"}}))
		if res := run(t, tools["x__roots"], `{}`); res.Output != "file:///srv/data\nfile:///tmp/work" {
			t.Fatalf("roots = %+v", res)
		}
	})
}

// Structured content is checked against the tool's output schema: content
// that does not fit, or none, is the tool's error; without text it reaches
// the model as JSON. The schema is recorded, so a bound tool checks too.
func TestStructuredOutput(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr transport) {
		m := tr.real(t, ServerConfig{})
		tools, _ := toolMap(t, m)
		if res := run(t, tools["x__typed"], `{}`); res.Output != `{"answer":42}` || res.Failed() {
			t.Fatalf("typed = %+v", res)
		}
		if res := run(t, tools["x__typed"], `{"mode":"wrong"}`); !strings.Contains(res.Error, "does not fit its output schema") || !strings.Contains(res.Error, `{"answer":"forty-two"}`) {
			t.Fatalf("typed wrong = %+v", res)
		}
		if res := run(t, tools["x__typed"], `{"mode":"none"}`); res.Error != "the tool declares an output schema but returned no structured content" {
			t.Fatalf("typed none = %+v", res)
		}
		if res := run(t, tools["x__structured"], `{}`); res.Output != `{"answer":42}` {
			t.Fatalf("structured without a schema = %+v", res)
		}
		rec := m.Record()
		if got := string(rec.OutputSchemas["x__typed"]); !strings.Contains(got, `"answer"`) || len(rec.OutputSchemas) != 1 {
			t.Fatalf("recorded output schemas = %v", rec.OutputSchemas)
		}
		bound, err := tr.real(t, ServerConfig{}).Bind(rec)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(bound, func(tl shell.Tool) bool { return tl.Spec().Name == "x__typed" })
		if res := run(t, bound[i], `{"mode":"wrong"}`); !strings.Contains(res.Error, "does not fit its output schema") {
			t.Fatalf("bound typed wrong = %+v", res)
		}
	})
}

// Images and sounds are kept as attachments, with their placeholders in the
// output; one over the cap is only described.
func TestAttachments(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr transport) {
		tools, _ := toolMap(t, tr.real(t, ServerConfig{MaxAttachmentBytes: 1000}))
		res := run(t, tools["x__image"], `{}`)
		if res.Output != fmt.Sprintf("a pixel:\n[image/png content, %d bytes]", len(mcptest.PNG)) ||
			len(res.Attachments) != 1 || res.Attachments[0].MIME != "image/png" || !bytes.Equal(res.Attachments[0].Data, mcptest.PNG) {
			t.Fatalf("image = %+v", res)
		}
		res = run(t, tools["x__audio"], `{}`)
		if len(res.Attachments) != 1 || res.Attachments[0].MIME != "audio/wav" || !bytes.Equal(res.Attachments[0].Data, mcptest.WAV) {
			t.Fatalf("audio = %+v", res)
		}
		res = run(t, tools["x__big_image"], `{"bytes":5000}`)
		if res.Output != "[image/png content, 5000 bytes: over the 1000-byte limit, not shown]" || len(res.Attachments) != 0 {
			t.Fatalf("big image = %+v", res)
		}
	})
}

// A call that times out is cancelled; the server stops it and keeps its
// session.
func TestCancellation(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr transport) {
		tools, _ := toolMap(t, tr.real(t, ServerConfig{Timeout: 100e6}))
		res := run(t, tools["x__sleep"], `{"ms":10000}`)
		if !strings.Contains(res.Error, "timed out after 100ms and was cancelled") || !strings.Contains(res.Error, "keeps running") {
			t.Fatalf("sleep = %+v", res)
		}
		eventually(t, "the server saw the cancellation", func() bool { return run(t, tools["x__cancellations"], `{}`).Output == "1" })
	})
}

// Progress notifications of a call reach its RunContext.Progress.
func TestProgress(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr transport) {
		tools, _ := toolMap(t, tr.real(t, ServerConfig{}))
		var mu sync.Mutex
		var got []string
		rc := shell.RunContext{Progress: func(p shell.ToolProgress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p.String())
		}}
		// The call holds its answer until every report is in: reports
		// that arrive after a call's answer are dropped.
		release := filepath.Join(t.TempDir(), "release")
		args, _ := json.Marshal(map[string]any{"steps": 3, "wait_for": release})
		done := make(chan core.ToolResult)
		go func() {
			done <- tools["x__progress"].Run(context.Background(), core.ToolCall{ID: "c", Args: args}, rc)
		}()
		want := []string{"33% — step 1 of 3", "67% — step 2 of 3", "100% — step 3 of 3"}
		eventually(t, "got every report", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Equal(got, want)
		})
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res.Output != "sent 3 progress notifications" {
			t.Fatalf("progress = %+v", res)
		}
		if res := run(t, tools["x__progress"], `{"steps":3}`); res.Output != "no progress token" {
			t.Fatalf("progress without a reporter = %+v", res)
		}
	})
}

// tools/list_changed makes the manager list the server's tools again: a tool
// added appears, one removed goes, and Version grows each time.
func TestToolListChanged(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr transport) {
		m := tr.real(t, ServerConfig{})
		tools, _ := toolMap(t, m)
		v := m.Version()
		names := func() []string {
			var out []string
			for _, tl := range m.Current() {
				out = append(out, tl.Spec().Name)
			}
			return out
		}
		if res := run(t, tools["x__add_tool"], `{"name":"extra"}`); res.Output != "added extra" {
			t.Fatalf("add_tool = %+v", res)
		}
		eventually(t, "listed the added tool", func() bool { return slices.Contains(names(), "x__extra") })
		if m.Version() <= v {
			t.Fatalf("version %d after a change, was %d", m.Version(), v)
		}
		extra := m.Current()[slices.Index(names(), "x__extra")]
		if res := run(t, extra, `{"text":"new"}`); res.Output != "new" {
			t.Fatalf("extra = %+v", res)
		}
		if got := m.Record().Tools; !slices.ContainsFunc(got, func(c core.Tool) bool { return c.Name == "x__extra" }) {
			t.Fatalf("the record lacks the added tool: %v", got)
		}
		v = m.Version()
		run(t, tools["x__remove_tool"], `{"name":"extra"}`)
		eventually(t, "dropped the removed tool", func() bool { return !slices.Contains(names(), "x__extra") })
		if m.Version() <= v {
			t.Fatalf("version %d after a removal, was %d", m.Version(), v)
		}
	})
}

// An optional server that cannot start is given up: its tools are left
// out, with a warning, and the record says so; a required one still fails
// the listing.
func TestOptionalServerThatCannotStart(t *testing.T) {
	bin := serverBinary(t)
	marker := filepath.Join(t.TempDir(), "started")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	broken := ServerConfig{Name: "gone", Command: bin, Args: []string{"-start-once", marker}}
	m, err := NewManager([]ServerConfig{{Name: "ok", Command: bin, Allow: []string{"echo"}}, broken}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, _, err := m.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "refusing to start again") {
		t.Fatalf("a required server that cannot start: %v", err)
	}

	broken.Optional = true
	m, err = NewManager([]ServerConfig{{Name: "ok", Command: bin, Allow: []string{"echo"}}, broken}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tools, warnings, err := m.Tools(context.Background())
	if err != nil {
		t.Fatalf("an optional server that cannot start failed the listing: %v", err)
	}
	if len(tools) != 1 || tools[0].Spec().Name != "ok__echo" {
		t.Fatalf("tools = %v", ToolSpecs(tools))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "mcp server gone is unavailable, its tools are left out") {
		t.Fatalf("warnings = %q", warnings)
	}
	if rec := m.Record(); rec.Unavailable["gone"] != "it could not be started" || len(rec.Tools) != 1 {
		t.Fatalf("record = %+v", rec)
	}
}

// An optional server that dies with no restart left is given up: the call
// that finds it so fails for good (not transiently), its tools are
// withdrawn, and Version grows.
func TestOptionalServerThatDies(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	m, err := NewManager([]ServerConfig{{Name: "x", Command: serverBinary(t), Args: []string{"-start-once", marker}, Optional: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tools, _ := toolMap(t, m)
	v := m.Version()
	if res := run(t, tools["x__crash"], `{}`); !strings.Contains(res.Error, "it is restarted for the next call") {
		t.Fatalf("crash = %+v", res)
	}
	res := run(t, tools["x__echo"], `{"text":"hi"}`)
	if !strings.HasPrefix(res.Error, "mcp server x is unavailable, its tools are withdrawn: ") || res.Transient {
		t.Fatalf("echo after the server died = %+v", res)
	}
	if m.Version() <= v || len(m.Current()) != 0 {
		t.Fatalf("version %d (was %d), tools %v: want the server's tools withdrawn", m.Version(), v, ToolSpecs(m.Current()))
	}
	if rec := m.Record(); rec.Unavailable["x"] != "it stopped and could not be started again" || len(rec.Tools) != 0 {
		t.Fatalf("record = %+v", rec)
	}
}
