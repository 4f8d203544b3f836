package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/sqlite"
)

// BenchmarkWaitingRuns (issue 29): N runs waiting at once on one server,
// each paused for an external tool. N runs of an agent whose first reply
// calls the external tool "approve" are created over HTTP (32 clients);
// once every one is awaiting_tool_results the benchmark measures what the
// waiting costs (goroutines and live heap per waiting run, the store's
// open SQLite connections), then answers every call over HTTP (POST
// /v1/runs/{id}/results, 32 clients) and waits until every run completed.
// It fails on any error, and unless every run completed once, with its
// own result and the scripted answer. N is STEPWISE_WAITING_RUNS (10000):
//
//	go test -run '^$' -bench BenchmarkWaitingRuns -benchtime 1x ./internal/server
func BenchmarkWaitingRuns(b *testing.B) {
	n := 10000
	if v := os.Getenv("STEPWISE_WAITING_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("STEPWISE_WAITING_RUNS=%q: want a positive number of runs", v)
		}
	}
	for range b.N {
		w := waitingRuns(b, n)
		b.ReportMetric(float64(w.n), "waiting-runs")
		b.ReportMetric(w.heapPerRun(), "heap-B/waiting-run")
		b.ReportMetric(w.goroutinesPerRun(), "goroutines/waiting-run")
		b.ReportMetric(float64(w.readConns+w.writeConns), "sqlite-conns")
		b.ReportMetric(w.pause.Seconds(), "pause-s")
		b.ReportMetric(w.answer.Seconds(), "answer-s")
		b.ReportMetric(float64(w.completed), "completed")
		b.ReportMetric(float64(w.errors), "errors")
		b.Logf("%d runs: goroutines %d before, %d waiting (%d with the clients' connections open); heap %d KiB before, %d KiB waiting; SQLite connections open while waiting: %d read (%d in use), %d write",
			w.n, w.goroutinesBefore, w.goroutinesWaiting, w.goroutinesConnected, w.heapBefore>>10, w.heapWaiting>>10, w.readConns, w.readInUse, w.writeConns)
	}
}

// waitingClients is how many client goroutines create and answer the runs
// (each with its own kept-alive connection).
const waitingClients = 32

// waiting is what waitingRuns measured.
type waiting struct {
	n int
	// Goroutines before the runs were created, while they all wait (the
	// clients' idle connections closed), and while they wait with the
	// clients' connections still open.
	goroutinesBefore, goroutinesWaiting, goroutinesConnected int
	// Live heap after a collection, before and while they all wait.
	heapBefore, heapWaiting uint64
	// The store's SQLite connections open (and the read ones in use)
	// while they all wait.
	readConns, readInUse, writeConns int
	// pause: from the first create until every run waits; answer: from
	// the first answer until every run completed.
	pause, answer time.Duration
	completed     int
	errors        int
}

func (w waiting) heapPerRun() float64 {
	return (float64(w.heapWaiting) - float64(w.heapBefore)) / float64(w.n)
}

func (w waiting) goroutinesPerRun() float64 {
	return float64(w.goroutinesWaiting-w.goroutinesBefore) / float64(w.n)
}

// waiterAgent writes "waiter": its first reply calls the external tool
// "approve", its second answers "done".
func waiterAgent(tb testing.TB, dir string) {
	write(tb, dir, "waiter.jsonl", `{"tool_calls": [{"id": "c1", "name": "approve", "arguments": {"n": 1}}]}`+"\n"+`{"text": "done"}`+"\n")
	write(tb, dir, "waiter.toml", `name = "waiter"
[models.primary]
provider = "script"
script = "waiter.jsonl"
[[tools]]
name = "approve"
mode = "external"
parameters = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
`)
}

// waitingRuns creates n runs of "waiter" on a server over a real SQLite
// file, waits until all of them wait for their external call, measures,
// answers each (run i gets "ok i") and waits until all completed; then it
// checks each run: completed, the scripted answer, one tool message, its
// own. Any failure is fatal.
func waitingRuns(tb testing.TB, n int) waiting {
	dir := tb.TempDir()
	waiterAgent(tb, dir)
	f := newFixture(tb, Config{AgentsDir: dir}) // DefaultWorkers, as stepwise serve
	st := f.srv.cfg.Store
	ctx := context.Background()
	c := &waitClient{url: f.url, hc: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: waitingClients, MaxConnsPerHost: waitingClients}}}
	defer c.hc.CloseIdleConnections()

	w := waiting{n: n}
	w.goroutinesBefore = settledGoroutines(0)
	w.heapBefore = liveHeap()

	// Create the runs.
	ids := make([]string, n)
	t0 := time.Now()
	c.each(n, func(i int) error {
		status, body, err := c.post("/v1/runs", fmt.Sprintf(`{"agent": "waiter", "input": "run %d"}`, i))
		if err != nil {
			return err
		}
		if status != http.StatusCreated {
			return fmt.Errorf("create %d: %d %s", i, status, body)
		}
		var run apiRun
		if err := json.Unmarshal(body, &run); err != nil {
			return fmt.Errorf("create %d: %v", i, err)
		}
		ids[i] = run.ID
		return nil
	})
	if err := c.firstErr(); err != nil {
		tb.Fatalf("%d errors creating the runs; the first: %v", c.errs.Load(), err)
	}
	awaitStatus(tb, st, ids, store.StatusAwaitingToolResults)
	w.pause = time.Since(t0)

	// What waiting costs: counted once the clients' connections are
	// closed (their goroutines, and the server's for them, are the
	// clients', not the runs'), and with them open.
	w.goroutinesConnected = runtime.NumGoroutine()
	c.hc.CloseIdleConnections()
	w.goroutinesWaiting = settledGoroutines(w.goroutinesBefore)
	w.heapWaiting = liveHeap()
	if s, ok := st.(*sqlite.SQLite); ok {
		r, wr := s.PoolStats()
		w.readConns, w.readInUse, w.writeConns = r.OpenConnections, r.InUse, wr.OpenConnections
	}
	if held, err := st.ListRuns(ctx, store.Filter{Status: store.StatusAwaitingToolResults}); err != nil {
		tb.Fatal(err)
	} else if len(held) != n {
		tb.Fatalf("%d runs awaiting tool results, want %d", len(held), n)
	} else {
		for _, ri := range held {
			if ri.Lease.Live(time.Now()) {
				tb.Fatalf("run %s waits with a live lease (held by %s)", ri.ID, ri.Lease.Owner)
			}
		}
	}

	// Answer every call.
	t0 = time.Now()
	c.each(n, func(i int) error {
		status, body, err := c.post("/v1/runs/"+ids[i]+"/results", fmt.Sprintf(`[{"tool_call_id": "c1", "result": "ok %d"}]`, i))
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("answer %d: %d %s", i, status, body)
		}
		return nil
	})
	if err := c.firstErr(); err != nil {
		tb.Fatalf("%d errors answering the runs; the first: %v", c.errs.Load(), err)
	}
	awaitStatus(tb, st, ids, store.StatusCompleted)
	w.answer = time.Since(t0)
	w.errors = int(c.errs.Load())

	// Each completed once, with the scripted answer and its own result.
	steps := -1
	for i, id := range ids {
		ri, err := st.Run(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		if ri.Status != store.StatusCompleted || ri.Answer != "done" {
			tb.Fatalf("run %d (%s): %s, answer %q", i, id, ri.Status, ri.Answer)
		}
		if steps == -1 {
			steps = ri.Steps
		} else if ri.Steps != steps {
			tb.Fatalf("run %d (%s) took %d steps, run 0 %d", i, id, ri.Steps, steps)
		}
		rec, err := st.LoadLatest(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		var results []string
		for _, m := range rec.State.Messages {
			if m.Role == core.RoleTool {
				results = append(results, m.Content)
			}
		}
		if len(results) != 1 || results[0] != fmt.Sprintf("ok %d", i) {
			tb.Fatalf("run %d (%s): tool results %q, want one, %q", i, id, results, fmt.Sprintf("ok %d", i))
		}
		w.completed++
	}
	left, err := st.ListRuns(ctx, store.Filter{Statuses: []store.Status{store.StatusRunning, store.StatusAwaitingToolResults,
		store.StatusInterrupted, store.StatusStalled, store.StatusFailed, store.StatusCancelled}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(left) != 0 {
		tb.Fatalf("%d runs not completed (the first %s: %s)", len(left), left[0].ID, left[0].Status)
	}
	return w
}

// awaitStatus waits until every run has the status; a run that ends
// otherwise, or stalls, is fatal, and so is a run still on its way after
// ten minutes.
func awaitStatus(tb testing.TB, st store.Store, ids []string, want store.Status) {
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Minute)
	for i := 0; i < len(ids); {
		ri, err := st.Run(ctx, ids[i])
		if err != nil {
			tb.Fatal(err)
		}
		switch {
		case ri.Status == want:
			i++
			continue
		case ri.Status.Ended() || ri.Status == store.StatusStalled || ri.Status == store.StatusInterrupted:
			tb.Fatalf("run %s is %s (%s %s), not %s", ids[i], ri.Status, ri.FailCode, ri.Reason, want)
		case time.Now().After(deadline):
			tb.Fatalf("run %s is still %s, not %s", ids[i], ri.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settledGoroutines counts the goroutines once they settle (connections
// closing, workers going idle): when the count is at most floor, or has
// not changed for 200 ms; at most 5 s.
func settledGoroutines(floor int) int {
	deadline := time.Now().Add(5 * time.Second)
	last, since := runtime.NumGoroutine(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		g := runtime.NumGoroutine()
		if g <= floor {
			return g
		}
		if g != last {
			last, since = g, time.Now()
		} else if time.Since(since) >= 200*time.Millisecond {
			break
		}
	}
	return last
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// waitClient posts to the server from a bounded number of goroutines,
// counting errors (it never stops a test from another goroutine).
type waitClient struct {
	url   string
	hc    *http.Client
	errs  atomic.Int64
	mu    sync.Mutex
	first error
}

func (c *waitClient) post(path, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, c.url+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// each calls fn(0..n-1) from waitingClients goroutines.
func (c *waitClient) each(n int, fn func(i int) error) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range waitingClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					c.errs.Add(1)
					c.mu.Lock()
					if c.first == nil {
						c.first = err
					}
					c.mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func (c *waitClient) firstErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}
