package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/internal/pgtest"
	"github.com/stepwise-agent/stepwise/store"
	"github.com/stepwise-agent/stepwise/store/postgres"
)

// BenchmarkServersOnPostgres (issue 29): 1, 2 and 4 `stepwise serve`
// processes (64 workers each, the default) on one fresh PostgreSQL schema
// share N runs of "relay", an agent whose scripted model answers at once:
// three read_file calls, each asked for by a model call, then the answer
// (eight steps a run as `stepwise ls` counts them, and step 0). The runs
// are created over HTTP by 16 clients, run i on server i mod n; the
// window is from the first create until the servers have logged every run
// completed. It reports:
//
//   - steps/s: the runs' steps over the window;
//   - pg-cpu-s and steps/pg-cpu-s: the CPU PostgreSQL spent on the servers
//     in the window (pgMeter: their backends and the server's own
//     processes), and steps per second of it;
//   - pg-host-cpu-s: every postgres process on this host (postgresCPU:
//     other clients' backends too, and those that exited), and
//     other-cpu-s, the host's busy time that was neither PostgreSQL, the
//     servers nor this process: both near pg-cpu-s and 0 when nothing
//     else ran;
//   - server-cpu-us/step: the serve processes' CPU per step.
//
// It fails unless every run completed with the scripted answer, its stored
// steps are 0..8, each once, and its three tool results are the files'.
// N is STEPWISE_SCALE_RUNS (2000):
//
//	go test -run '^$' -bench BenchmarkServersOnPostgres -benchtime 1x ./cmd/stepwise
func BenchmarkServersOnPostgres(b *testing.B) {
	runs := 2000
	if v := os.Getenv("STEPWISE_SCALE_RUNS"); v != "" {
		var err error
		if runs, err = strconv.Atoi(v); err != nil || runs <= 0 {
			b.Fatalf("STEPWISE_SCALE_RUNS=%q: want a positive number of runs", v)
		}
	}
	for _, servers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("servers=%d", servers), func(b *testing.B) {
			for range b.N {
				r := serversOnPostgres(b, servers, runs)
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(r.steps)/r.window.Seconds(), "steps/s")
				if r.pgSeen {
					b.ReportMetric(r.pgCPU, "pg-cpu-s")
					b.ReportMetric(float64(r.steps)/r.pgCPU, "steps/pg-cpu-s")
				} else {
					b.Logf("PostgreSQL's CPU not measured: its processes are not on this host")
				}
				b.ReportMetric(r.pgHostCPU, "pg-host-cpu-s")
				b.ReportMetric(r.otherCPU, "other-cpu-s")
				b.ReportMetric(r.serverCPU/float64(r.steps)*1e6, "server-cpu-us/step")
				b.ReportMetric(float64(r.runs), "runs")
				b.ReportMetric(float64(r.failed), "failed")
				b.Logf("%d servers, %d runs, %d steps in %.2f s; CPU seconds: PostgreSQL %.2f for the servers (%d of its processes exited), %.2f on the host; servers %.2f; this process (the clients) %.2f; the rest of the host %.2f; runs completed per server: %v",
					servers, r.runs, r.steps, r.window.Seconds(), r.pgCPU, r.pgGone, r.pgHostCPU, r.serverCPU, r.clientCPU, r.otherCPU, r.perServer)
			}
		})
	}
}

// TestServersOnPostgresShareTheSteps: the benchmark's workload at a small
// size, as a test: two servers on one PostgreSQL schema complete 40 runs,
// each step once, and each server completes some.
func TestServersOnPostgresShareTheSteps(t *testing.T) {
	r := serversOnPostgres(t, 2, 40)
	if r.failed != 0 || r.steps != 40*relaySteps {
		t.Fatalf("%d failed, %d steps", r.failed, r.steps)
	}
	for i, done := range r.perServer {
		if done == 0 {
			t.Errorf("server %d completed no run (per server: %v)", i, r.perServer)
		}
	}
}

// relayCalls is how many read_file calls a relay run makes; relaySteps is
// its steps as `stepwise ls` and the API count them (RunInfo.LastSeq): a
// model call for each tool call and one for the answer, and a step for
// each call's result. The store holds one more, step 0, the start.
const (
	relayCalls = 3
	relaySteps = 2*relayCalls + 2
)

// relayAgent writes "relay" and the file it reads into dir.
func relayAgent(tb testing.TB, dir string) {
	var script strings.Builder
	for k := 1; k <= relayCalls; k++ {
		fmt.Fprintf(&script, `{"tool_calls": [{"id": "r%d", "name": "read_file", "arguments": {"path": "note%d.txt"}}]}`+"\n", k, k)
	}
	script.WriteString(`{"text": "done"}` + "\n")
	files := map[string]string{
		"relay.jsonl": script.String(),
		"relay.toml": `name = "relay"
[models.primary]
provider = "script"
script = "relay.jsonl"
[[tools]]
builtin = "read_file"
root = "."
`,
	}
	for k := 1; k <= relayCalls; k++ {
		files[fmt.Sprintf("note%d.txt", k)] = relayNote
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

const relayNote = "a note of a few words\n"

// scaled is what serversOnPostgres measured.
type scaled struct {
	runs, failed, steps int
	window              time.Duration
	// CPU seconds in the window: PostgreSQL's for the servers (pgMeter;
	// pgSeen false when its processes are not on this host), every
	// postgres process's on this host (postgresCPU: other clients' too),
	// the servers' together, this process's (the clients creating the
	// runs, and the log readers), and the rest of the host's busy time.
	pgCPU, pgHostCPU, serverCPU, clientCPU, otherCPU float64
	pgSeen                                           bool
	// pgGone counts PostgreSQL processes that exited in the window, whose
	// CPU pgCPU lacks.
	pgGone int
	// perServer is how many runs each server logged completed.
	perServer []int
}

// scaleClients is how many client goroutines create the runs (each with
// its own kept-alive connection).
const scaleClients = 16

// serversOnPostgres starts n servers on a fresh schema of the test
// PostgreSQL server (skipping as pgtest does where there is none),
// creates runs runs of relay spread over them, waits until every server
// has logged each completed, stops the servers with SIGTERM and checks
// every run in the store. Any error, a run that did not complete within
// five minutes, and a run that did not complete once with its steps each
// once, is fatal.
func serversOnPostgres(tb testing.TB, n, runs int) scaled {
	db := pgtest.SchemaURL(tb)
	u, err := url.Parse(db)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	meter := pgMeter{app: u.Query().Get("search_path")} // the fresh schema's name
	if meter.conn, err = pgx.Connect(ctx, db); err != nil {
		tb.Fatal(err)
	}
	defer meter.conn.Close(ctx)
	dir := tb.TempDir()
	relayAgent(tb, dir)
	servers := make([]*served, n)
	pids := make([]int, n)
	for i := range servers {
		servers[i] = startServe(tb, db+"&application_name="+url.QueryEscape(meter.app), dir)
		pids[i] = servers[i].cmd.Process.Pid
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: scaleClients, MaxConnsPerHost: scaleClients}}
	defer hc.CloseIdleConnections()

	// cpu reads every CPU figure at once.
	type cpuReading struct {
		pg                         pgReading
		pgSeen                     bool
		pgHost, srv, self, machine float64
	}
	cpu := func() (c cpuReading) {
		var err error
		if c.pg, c.pgSeen, err = meter.read(ctx); err != nil {
			tb.Fatal(err)
		}
		if c.pgHost, _, err = postgresCPU(); err != nil {
			tb.Fatal(err)
		}
		for _, pid := range pids {
			s, err := processCPU(pid)
			if err != nil {
				tb.Fatal(err)
			}
			c.srv += s
		}
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			tb.Fatal(err)
		}
		c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		if c.machine, err = machineCPU(); err != nil {
			tb.Fatal(err)
		}
		return c
	}

	r := scaled{runs: runs, perServer: make([]int, n)}
	before := cpu()
	t0 := time.Now()
	ids := make([]string, runs)
	errs := make(chan error, scaleClients)
	var wg sync.WaitGroup
	for c := range scaleClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < runs; i += scaleClients {
				id, err := createRelay(hc, servers[i%n].url, i)
				if err != nil {
					errs <- err
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}

	// Every run is logged once by the server that completes it ("run ID:
	// completed after step N"); any other end is logged as well.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		done, ended := 0, 0
		for i, s := range servers {
			log := s.logText()
			r.perServer[i] = strings.Count(log, ": completed after step ")
			done += r.perServer[i]
			ended += strings.Count(log, ": failed after step ") + strings.Count(log, ": cancelled after step ")
		}
		if done+ended >= runs {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d runs completed, %d failed, after 5 minutes", done, runs, ended)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.window = time.Since(t0)
	after := cpu()
	r.pgSeen = before.pgSeen && after.pgSeen
	r.pgCPU, r.pgGone = after.pg.since(before.pg)
	r.pgHostCPU, r.serverCPU, r.clientCPU = after.pgHost-before.pgHost, after.srv-before.srv, after.self-before.self
	r.otherCPU = after.machine - before.machine - r.pgHostCPU - r.serverCPU - r.clientCPU

	for _, s := range servers {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, s := range servers {
		select {
		case code := <-s.done:
			if code != 0 {
				tb.Fatalf("serve exited %d after SIGTERM:\n%s", code, s.logText())
			}
		case <-time.After(30 * time.Second):
			tb.Fatalf("serve did not exit after SIGTERM:\n%s", s.logText())
		}
	}
	r.failed, r.steps = checkRelays(tb, db, ids)
	if r.failed > 0 {
		tb.Fatalf("%d of %d runs did not complete", r.failed, runs)
	}
	return r
}

// createRelay creates run i of relay on the server at url.
func createRelay(hc *http.Client, url string, i int) (string, error) {
	resp, err := hc.Post(url+"/v1/runs", "application/json", strings.NewReader(fmt.Sprintf(`{"agent": "relay", "input": "run %d"}`, i)))
	if err != nil {
		return "", fmt.Errorf("create %d: %w", i, err)
	}
	defer resp.Body.Close()
	var run servedRun
	err = json.NewDecoder(resp.Body).Decode(&run)
	if resp.StatusCode != http.StatusCreated || err != nil || run.ID == "" {
		return "", fmt.Errorf("create %d: %d %v %+v", i, resp.StatusCode, err, run)
	}
	return run.ID, nil
}

// checkRelays reads every run back from the store: each completed with
// the answer "done", its stored steps 0..relaySteps, each once and in order,
// and its relayCalls tool results the note. A run otherwise is fatal; a
// run that did not complete is counted in failed. steps is the steps of
// all runs (LastSeq, as `stepwise ls` counts them).
func checkRelays(tb testing.TB, db string, ids []string) (failed, steps int) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, db, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	for i, id := range ids {
		ri, err := st.Run(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		if ri.Status != store.StatusCompleted {
			tb.Errorf("run %d (%s) is %s (%s %s)", i, id, ri.Status, ri.FailCode, ri.Reason)
			failed++
			continue
		}
		var seqs []int
		if err := st.Steps(ctx, id, func(rec store.StepRecord) error {
			seqs = append(seqs, rec.Seq)
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
		for k, seq := range seqs {
			if seq != k {
				tb.Fatalf("run %d (%s): steps %v, want 0..%d each once", i, id, seqs, relaySteps)
			}
		}
		if ri.Answer != "done" || ri.LastSeq != relaySteps || len(seqs) != relaySteps+1 {
			tb.Fatalf("run %d (%s): answer %q, last step %d (%d stored), want %q and %d", i, id, ri.Answer, ri.LastSeq, len(seqs), "done", relaySteps)
		}
		rec, err := st.LoadLatest(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		results := 0
		for _, m := range rec.State.Messages {
			if m.Role == core.RoleTool {
				if !strings.Contains(m.Content, strings.TrimSpace(relayNote)) {
					tb.Fatalf("run %d (%s): a tool result %q", i, id, m.Content)
				}
				results++
			}
		}
		if results != relayCalls {
			tb.Fatalf("run %d (%s): %d tool results, want %d", i, id, results, relayCalls)
		}
		steps += ri.LastSeq
	}
	return failed, steps
}
