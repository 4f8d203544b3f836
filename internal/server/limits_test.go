package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/memtest"
	"github.com/stepwise-agent/stepwise/store"
)

const mib = 1 << 20

// A 50 MB agent file in the agents directory is refused from its size:
// 422 invalid_agent, under 1 MiB allocated, no run stored.
func TestOversizedAgentFileIsRefusedUnread(t *testing.T) {
	dir := agentsDir(t)
	f, err := os.Create(filepath.Join(dir, "big.toml"))
	if err == nil {
		err = f.Truncate(50 * mib) // sparse: no room on disk
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, Config{Workers: 1, AgentsDir: dir})
	var r reply
	n := memtest.Allocated(func() { r = fx.do("POST", "/v1/runs", map[string]any{"agent": "big", "input": "hello"}) })
	if r.status != http.StatusUnprocessableEntity || r.code(t) != codeInvalidAgent || !strings.Contains(string(r.body), "at most 1048576 bytes (1 MiB) and this one is 52428800 bytes") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), dir) {
		t.Errorf("the error shows the server's path: %s", r.body)
	}
	if !memtest.Under(n, 1*mib) {
		t.Errorf("refusing a 50 MB agent file allocated %d bytes, want under 1 MiB", n)
	}
	if l := fx.do("GET", "/v1/runs", nil); !strings.Contains(string(l.body), `"runs":[]`) {
		t.Errorf("a run was stored: %s", l.body)
	}
}

// GET /v1/runs over 10 runs whose agent sources weigh 5 MB each reads
// none of them: under 4 MiB allocated (over 100 MB before).
func TestListingReadsNoAgentSource(t *testing.T) {
	fx := newFixture(t, Config{Workers: 1})
	src := []byte(`{"toml":"name = \"heavy\"\nsystem_prompt = \"` + strings.Repeat("p", 5*mib) + `\""}`)
	cfg := core.Config{Name: "heavy", Models: core.Models{Primary: "m"}}
	for i := range 10 {
		initial, err := core.Start(cfg, core.Request{Input: "question"})
		if err != nil {
			t.Fatal(err)
		}
		// Held by a driver elsewhere for an hour: no worker here claims it.
		if _, err := fx.srv.cfg.Store.CreateRun(context.Background(), store.NewRun{ID: fmt.Sprintf("run-%02d", i), Agent: "heavy",
			Config: src, Input: "question", Initial: initial, Owner: "elsewhere/1/x", LeaseTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	src = nil
	var r reply
	n := memtest.Allocated(func() { r = fx.do("GET", "/v1/runs?limit=20", nil) })
	if r.status != http.StatusOK || strings.Count(string(r.body), `"id":"run-`) != 10 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if !memtest.Under(n, 4*mib) {
		t.Errorf("listing 10 runs with 5 MB agents allocated %d bytes, want under 4 MiB", n)
	}
	t.Logf("GET /v1/runs: %d bytes allocated", n)
}

// lazyBody is n bytes of a JSON string's inside, made as read.
type lazyBody struct{ left int64 }

func (b *lazyBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), b.left)
	for i := range n {
		p[i] = 'x'
	}
	b.left -= n
	return int(n), nil
}

// A 50 MB body (an input, results) is cut off at the body limit (1 MiB):
// 413 too_large, under 8 MiB allocated by client and server together,
// nothing stored.
func TestOversizedBodiesAreRefusedAtTheLimit(t *testing.T) {
	fx := newFixture(t, Config{Workers: 1})
	var paused apiRun
	fx.do("POST", "/v1/runs", map[string]any{"agent": "shopper", "input": "buy", "options": map[string]string{"wait": "5s"}}).json(t, &paused)
	for _, c := range []struct{ path, head string }{
		{"/v1/runs", `{"agent": "shopper", "input": "`},
		{"/v1/runs/" + paused.ID + "/results", `[{"tool_call_id": "call_approve", "result": "`},
	} {
		var status int
		var body []byte
		n := memtest.Allocated(func() {
			req, _ := http.NewRequest("POST", fx.url+c.path, io.MultiReader(strings.NewReader(c.head), &lazyBody{left: 50 * mib}))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", c.path, err)
			}
			defer resp.Body.Close()
			status = resp.StatusCode
			body, _ = io.ReadAll(resp.Body)
		})
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), `"too_large"`) {
			t.Fatalf("%s: %d %s", c.path, status, body)
		}
		if !memtest.Under(n, 8*mib) {
			t.Errorf("%s: refusing a 50 MB body allocated %d bytes, want under 8 MiB", c.path, n)
		}
		t.Logf("%s: a 50 MB body: %d bytes allocated", c.path, n)
	}
	var list runList
	fx.do("GET", "/v1/runs", nil).json(t, &list)
	if len(list.Runs) != 1 || list.Runs[0].Status != "awaiting_tool_results" {
		t.Errorf("after the refused bodies: %+v", list.Runs)
	}
}
