package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
)

// Benchmarks of the service (figures in docs/performance.md):
//
//	go test -run '^$' -bench . -benchtime 1x ./internal/server/

// pauserAgent writes an agent that asks for the external call "approve"
// turns times, then answers.
func pauserAgent(b *testing.B, dir string, turns int) {
	var script strings.Builder
	for k := 1; k <= turns; k++ {
		fmt.Fprintf(&script, `{"tool_calls": [{"id": "c%d", "name": "approve", "arguments": {"n": %d}}]}`+"\n", k, k)
	}
	script.WriteString(`{"text": "done"}` + "\n")
	write(b, dir, "pauser.jsonl", script.String())
	write(b, dir, "pauser.toml", `name = "pauser"
[models.primary]
provider = "script"
script = "pauser.jsonl"
[limits]
max_steps = 1000000
[[tools]]
name = "approve"
mode = "external"
parameters = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
`)
}

func write(b testing.TB, dir, name, text string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkExternalRoundTrip times an external tool's round trip: the
// results posted, until the run's next pause is seen. Over HTTP: POST
// /results, then the pause arrives on the run's event stream (one SSE
// connection held open). In process, the same work on the same server
// without HTTP: Runner.Answer, a worker woken, and the pause seen through
// the server's hub. The two alternate, one of each per iteration, on two
// runs, so both see the same machine (ADR 0009). http-p50-us and
// inproc-p50-us are their medians; overhead-p50-us is their difference.
func BenchmarkExternalRoundTrip(b *testing.B) {
	dir := b.TempDir()
	pauserAgent(b, dir, b.N+1)
	f := newFixture(b, Config{Workers: 4, AgentsDir: dir})
	ctx := context.Background()
	create := func() apiRun {
		var run apiRun
		r := f.do("POST", "/v1/runs", map[string]any{"agent": "pauser", "input": "go", "options": map[string]string{"wait": "10s"}})
		r.json(b, &run)
		if run.Status != "awaiting_tool_results" {
			b.Fatalf("run: %s", r.body)
		}
		return run
	}
	overHTTP, inProc := create(), create()
	ag, _, err := f.srv.agents.byName("pauser")
	if err != nil {
		b.Fatal(err)
	}

	// The event stream of the run answered over HTTP.
	req, _ := http.NewRequest("GET", f.url+"/v1/runs/"+overHTTP.ID+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	events.Buffer(make([]byte, 1<<20), 16<<20)
	// nextPause reads events until a "run" event shows the run paused after
	// step minSteps.
	nextPause := func(minSteps int) {
		var event string
		for events.Scan() {
			line := events.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "run":
				var run apiRun
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &run); err != nil {
					b.Fatal(err)
				}
				if run.Status == "awaiting_tool_results" && run.Steps >= minSteps {
					return
				}
			}
		}
		b.Fatalf("the event stream ended: %v", events.Err())
	}
	nextPause(overHTTP.Steps)
	wake, done := f.srv.hub.subscribe(inProc.ID)
	defer done()

	httpT := make([]time.Duration, 0, b.N)
	procT := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for k := 1; k <= b.N; k++ {
		call := fmt.Sprintf("c%d", k)
		// Over HTTP.
		t0 := time.Now()
		r := f.do("POST", "/v1/runs/"+overHTTP.ID+"/results", `[{"tool_call_id": "`+call+`", "result": "ok"}]`)
		if r.status != http.StatusOK {
			b.Fatalf("results: %d %s", r.status, r.body)
		}
		nextPause(overHTTP.Steps + 2*k)
		httpT = append(httpT, time.Since(t0))

		// In process.
		t0 = time.Now()
		if _, err := f.srv.runner.Pool().Answer(ctx, ag, inProc.ID, shell.Answers{Results: []core.ToolResult{{CallID: call, Output: "ok"}}}); err != nil {
			b.Fatal(err)
		}
		f.srv.poke()
		for {
			ri, err := f.srv.cfg.Store.Run(ctx, inProc.ID)
			if err != nil {
				b.Fatal(err)
			}
			if ri.Status == store.StatusAwaitingToolResults && ri.LastSeq >= inProc.Steps+2*k {
				break
			}
			<-wake
		}
		procT = append(procT, time.Since(t0))
	}
	b.StopTimer()
	h, p := medianOf(httpT), medianOf(procT)
	b.ReportMetric(us(h), "http-p50-us")
	b.ReportMetric(us(p), "inproc-p50-us")
	b.ReportMetric(us(h-p), "overhead-p50-us")
	b.ReportMetric(us(percentileOf(httpT, 0.99)), "http-p99-us")
}

// BenchmarkConcurrentRuns: 100, 300 and 1,000 runs at once on one server
// (a worker each, SQLite) of an agent whose scripted model takes 50 ms per call:
// three model calls and two read_file calls each. A step's overhead is the
// time between two checkpoints less the model's 50 ms when the step was a
// model call: claiming, building the request, validation, the tool, the
// checkpoint, and waiting for the store. overhead-p99-ms is its 99th
// percentile over every step of every run (the first includes the wait for
// a worker to pick the new run up, while the other runs are being created);
// after-pickup-p99-ms leaves the first out; after-create-p99-ms is the
// same over the steps that began after the last create returned (while
// the 32 clients create runs, the creates take the CPU that steps of the
// runs already going wait for). failed counts runs that did not
// complete.
//
// steps/s is the steps served over the wall time, from the first create to
// the last run's end; steps/s-after-create counts only the steps written
// after the last create returned, over the time from then to the end.
// cpu-us/step is the process's CPU time (user and system, getrusage) over
// the whole window divided by its steps; cpu-us/step-after-create the same
// over the window after the creates. Both include everything in the
// process: the server, its workers, the store's Go side and its SQLite (or
// the PostgreSQL client; the PostgreSQL server's own CPU is not counted),
// and the benchmark's 32 HTTP clients while they create. The benchmark
// waits for the runs through the runner's events (one counter), not by
// polling the store.
func BenchmarkConcurrentRuns(b *testing.B) {
	for _, runs := range []int{100, 300, 1000} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) { concurrentRuns(b, runs, 32, 0, nil) })
	}
}

// BenchmarkConcurrentRunsPostgres is BenchmarkConcurrentRuns on
// PostgreSQL (internal/pgtest: STEPWISE_TEST_POSTGRES, else the local
// server; it skips when none answers).
func BenchmarkConcurrentRunsPostgres(b *testing.B) {
	for _, runs := range []int{100, 300, 1000} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			concurrentRuns(b, runs, 32, 0, func() store.Store {
				// A schema per iteration, as SQLite gets a file.
				st, err := postgres.Open(context.Background(), pgtest.SchemaURL(b), nil)
				if err != nil {
					b.Fatal(err)
				}
				return st
			})
		})
	}
}

// BenchmarkCreateClients is BenchmarkConcurrentRuns/runs=1000 with 2, 4, 8
// and 16 clients creating the runs instead of 32: fewer creates in
// progress at once leave more of the CPU to the steps of the runs already
// going (their p99), and make the writer's batches smaller (its CPU per
// step). On two cores, 2 clients put the p99 after pickup under 10 ms at
// nearly twice the CPU per step (docs/performance.md, the eighth round);
// internal/bench/manycore/run.sh measures it on many cores.
func BenchmarkCreateClients(b *testing.B) {
	for _, clients := range []int{2, 4, 8, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { concurrentRuns(b, 1000, clients, 0, nil) })
	}
}

// BenchmarkArrivingRuns is BenchmarkConcurrentRuns/runs=1000 with the runs
// arriving at a steady rate instead of all at once: run i is created at
// i/rate seconds (open loop: a client late for its time does not delay
// the next), so that the steps' overhead is measured at a known load
// rather than in a burst that saturates the host. At 1,000 runs a second
// about 170 runs are in flight at any time (each lives ~170 ms).
func BenchmarkArrivingRuns(b *testing.B) {
	for _, rate := range []int{500, 1000, 2000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { concurrentRuns(b, 1000, 32, time.Second/time.Duration(rate), nil) })
	}
}

// ended counts the runs that ended (or stalled) as the runner reports
// them, and closes all once it has seen n.
type ended struct {
	mu   sync.Mutex
	n    int
	seen int
	last time.Time
	all  chan struct{}
}

func (e *ended) Event(ev shell.Event) {
	switch ev.Kind {
	case "complete", "fail", "stalled", "interrupted":
	default:
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen++
	e.last = time.Now()
	if e.seen == e.n {
		close(e.all)
	}
}

// allocated is the bytes the process's heap allocated so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func concurrentRuns(b *testing.B, runs, clients int, every time.Duration, open func() store.Store) {
	const delay = 50 * time.Millisecond
	dir := b.TempDir()
	write(b, dir, "note.txt", "a note of a few words\n")
	write(b, dir, "sleeper.jsonl", strings.Repeat(`{"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": "note.txt"}}], "delay_ms": 50}`+"\n", 2)+
		`{"text": "done", "delay_ms": 50}`+"\n")
	write(b, dir, "sleeper.toml", `name = "sleeper"
[models.primary]
provider = "script"
script = "sleeper.jsonl"
[[tools]]
builtin = "read_file"
root = "."
`)
	for range b.N {
		cfg := Config{Workers: runs, AgentsDir: dir}
		if open != nil {
			cfg.Store = open()
		}
		done := &ended{n: runs, all: make(chan struct{})}
		cfg.Runner.Observer = done
		f := newFixture(b, cfg)
		ctx := context.Background()
		ids := make([]string, runs)
		var wg sync.WaitGroup
		sem := make(chan struct{}, clients)
		cpu0, alloc0 := cpuTime(b), allocated()
		t0 := time.Now()
		for i := range runs {
			if every > 0 {
				time.Sleep(time.Until(t0.Add(time.Duration(i) * every)))
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				var run apiRun
				f.do("POST", "/v1/runs", map[string]any{"agent": "sleeper", "input": fmt.Sprint(i)}).json(b, &run)
				ids[i] = run.ID
			}()
		}
		wg.Wait()
		cpu1, t1 := cpuTime(b), time.Now()
		select {
		case <-done.all:
		case <-time.After(5 * time.Minute):
			b.Fatalf("%d of %d runs ended after 5 minutes", done.seen, runs)
		}
		cpu2, alloc2 := cpuTime(b), allocated()
		done.mu.Lock()
		t2 := done.last
		done.mu.Unlock()
		wall := t2.Sub(t0)
		failed := 0
		for _, id := range ids {
			ri, err := f.srv.cfg.Store.Run(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if ri.Status != store.StatusCompleted {
				failed++
			}
		}
		var overhead, later, calm []time.Duration
		steps, stepsAfter := 0, 0
		for _, id := range ids {
			var prev *store.StepRecord
			err := f.srv.cfg.Store.StepsFrom(ctx, id, 0, func(rec store.StepRecord) error {
				if rec.Seq > 0 {
					steps++
					if !rec.Created.Before(t1) {
						stepsAfter++
					}
				}
				if prev != nil {
					d := rec.Created.Sub(prev.Created)
					if _, ok := prev.Action.(core.RequestModelCall); ok {
						d -= delay
					}
					overhead = append(overhead, d)
					if rec.Seq > 1 {
						later = append(later, d)
						if !prev.Created.Before(t1) {
							calm = append(calm, d)
						}
					}
				}
				r := rec
				prev = &r
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(runs), "runs")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(float64(len(overhead))/float64(runs), "steps/run")
		b.ReportMetric(ms(medianOf(overhead)), "overhead-p50-ms")
		b.ReportMetric(ms(percentileOf(overhead, 0.99)), "overhead-p99-ms")
		b.ReportMetric(ms(percentileOf(later, 0.99)), "after-pickup-p99-ms")
		b.ReportMetric(ms(percentileOf(calm, 0.99)), "after-create-p99-ms")
		b.ReportMetric(ms(wall), "wall-ms")
		b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
		b.ReportMetric(us(cpu2-cpu0)/float64(steps), "cpu-us/step")
		b.ReportMetric(float64(alloc2-alloc0)/float64(steps), "alloc-B/step")
		if after := t2.Sub(t1); stepsAfter > 0 && after > 0 {
			b.ReportMetric(float64(stepsAfter)/after.Seconds(), "steps/s-after-create")
			b.ReportMetric(us(cpu2-cpu1)/float64(stepsAfter), "cpu-us/step-after-create")
		}
		if failed > 0 {
			b.Fatalf("%d runs did not complete", failed)
		}
		// Its workers stop, so that the next iteration (and a profile
		// of several) sees one server.
		f.srv.Shutdown()
	}
}

func medianOf(d []time.Duration) time.Duration { return percentileOf(d, 0.5) }

func percentileOf(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1))]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
