package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stepwise-agent/stepwise/shell/telemetry"
	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	c := &command{name: "stats", args: "[RUN_ID...] [--agent A] [--status S] [--since T] [--json]", summary: "tool and agent call counts and latencies over stored runs",
		help: `Counts and times the calls of the runs selected (all runs, or the RUN_IDs given, narrowed
by --agent, --status and --since), from their stored steps. Per tool: calls, errors
(calls whose result was an error the model saw) and latency p50, p95 and max. Per
agent: runs, steps (each run's last seq, as ls counts them), model calls, tokens, model-call latency and run duration (from its
creation to its last step). A call's latency is the time from the step that requested
it to the next step, or, for each call of a batch and every non-idempotent call, the
time its journal entry records; an external call's includes the wait for its answer.
Percentiles are nearest-rank. Tools and agents are listed by name.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		status := fs.String("status", "", "only runs with this status ("+statusList()+")")
		agentName := fs.String("agent", "", "only runs of this agent")
		since := fs.String("since", "", "only runs created since then: a duration back from now (24h) or a date or time (2026-01-02, RFC 3339)")
		asJSON := fs.Bool("json", false, `print {"runs": N, "tools": [...], "agents": [...]}`)
		ids, code := e.parse(c, fs, args, 0, -1)
		if code >= 0 {
			return code
		}
		want := store.Status(*status)
		if want != "" && !want.Valid() {
			fmt.Fprintf(e.stderr, "stepwise stats: unknown status %q (want one of %s)\n", *status, statusList())
			return exitUsage
		}
		now := time.Now()
		from, err := parseSince(*since, now)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise stats: --since: %v\n", err)
			return exitUsage
		}
		ctx, st, done, code := e.readSession(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		var infos []store.RunInfo
		if len(ids) > 0 {
			for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
				info, err := st.Run(ctx, id)
				if err != nil {
					return e.storeErr(c.name, err)
				}
				infos = append(infos, info)
			}
		} else if infos, err = st.ListRuns(ctx, store.Filter{Agent: *agentName}); err != nil {
			return e.storeErr(c.name, err)
		}
		// Each run is read and counted in turn: one run's steps are in
		// memory at a time, however many runs are selected.
		t := newTally()
		for _, info := range infos {
			if s, _ := shownStatus(info, now); (want != "" && s != want) || (*agentName != "" && info.Agent != *agentName) || info.Created.Before(from) {
				continue
			}
			run, err := telemetry.ReadRun(ctx, st, info.ID)
			if err != nil {
				return e.storeErr(c.name, err)
			}
			t.add(run)
		}
		s := t.stats()
		if *asJSON {
			return e.writeJSON(s)
		}
		s.write(e.stdout)
		return 0
	}
	register(c)
}

// parseSince reads --since: empty (the beginning), a duration back from
// now, a date, or an RFC 3339 time.
func parseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is negative", v)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateTime, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor a date (2026-01-02) nor an RFC 3339 time", v)
}

// stats is what stepwise stats shows (and prints with --json).
type stats struct {
	Runs   int          `json:"runs"`
	Tools  []toolStats  `json:"tools"`
	Agents []agentStats `json:"agents"`
}

type toolStats struct {
	Name    string    `json:"name"`
	Calls   int       `json:"calls"`
	Errors  int       `json:"errors"`
	Latency latencies `json:"latency_ms"`
	times   []time.Duration
}

type agentStats struct {
	Name         string     `json:"name"`
	Runs         int        `json:"runs"`
	Steps        int        `json:"steps"`
	ModelCalls   int        `json:"model_calls"`
	Tokens       jsonTokens `json:"tokens"`
	ModelLatency latencies  `json:"model_latency_ms"`
	RunDuration  latencies  `json:"run_duration_ms"`
	model, run   []time.Duration
}

// latencies are nearest-rank percentiles, in milliseconds (zero with no
// samples).
type latencies struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// summarize counts and times the calls of runs.
func summarize(runs []*telemetry.Run) stats {
	t := newTally()
	for _, r := range runs {
		t.add(r)
	}
	return t.stats()
}

// tally is stats being counted, one run at a time; it keeps the samples
// of the latencies, not the runs.
type tally struct {
	runs   int
	tools  map[string]*toolStats
	agents map[string]*agentStats
}

func newTally() *tally {
	return &tally{tools: map[string]*toolStats{}, agents: map[string]*agentStats{}}
}

// add counts and times the calls of r.
func (t *tally) add(r *telemetry.Run) {
	t.runs++
	tools, agents := t.tools, t.agents
	a := agents[r.Info.Agent]
	if a == nil {
		a = &agentStats{Name: r.Info.Agent}
		agents[r.Info.Agent] = a
	}
	a.Runs++
	a.Steps += r.Info.LastSeq
	a.Tokens.Prompt += r.Last.Counters.PromptTokens
	a.Tokens.Completion += r.Last.Counters.CompletionTokens
	a.run = append(a.run, r.End.Sub(r.Info.Created))
	for _, c := range r.Calls {
		switch c.Kind {
		case telemetry.KindChat:
			a.ModelCalls++
			a.model = append(a.model, c.Duration())
		case telemetry.KindTool:
			ts := tools[c.Name]
			if ts == nil {
				ts = &toolStats{Name: c.Name}
				tools[c.Name] = ts
			}
			ts.Calls++
			if c.Failed {
				ts.Errors++
			}
			ts.times = append(ts.times, c.Duration())
		}
	}
}

// stats is what has been counted.
func (t *tally) stats() stats {
	tools, agents := t.tools, t.agents
	s := stats{Runs: t.runs, Tools: []toolStats{}, Agents: []agentStats{}}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		t := tools[name]
		t.Latency = latencyOf(t.times)
		s.Tools = append(s.Tools, *t)
	}
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		a := agents[name]
		a.ModelLatency, a.RunDuration = latencyOf(a.model), latencyOf(a.run)
		s.Agents = append(s.Agents, *a)
	}
	return s
}

// latencyOf is the nearest-rank p50, p95 and max of ds.
func latencyOf(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	sorted := slices.Sorted(slices.Values(ds))
	return latencies{P50: ms(percentile(sorted, 50)), P95: ms(percentile(sorted, 95)), Max: ms(sorted[len(sorted)-1])}
}

// percentile is the nearest-rank p-th percentile of sorted (not empty):
// the smallest value with at least p% of the values at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s stats) write(w io.Writer) {
	fmt.Fprintf(w, "%d run(s)\n", s.Runs)
	if s.Runs == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(s.Tools) > 0 {
		fmt.Fprintln(tw, "\nTOOL\tCALLS\tERRORS\tP50\tP95\tMAX")
		for _, t := range s.Tools {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Name, t.Calls, t.Errors, t.Latency)
		}
	}
	fmt.Fprintln(tw, "\nAGENT\tRUNS\tSTEPS\tMODEL CALLS\tTOKENS\tMODEL P50\tP95\tMAX\tRUN P50\tP95\tMAX")
	for _, a := range s.Agents {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d+%d\t%s\t%s\n", a.Name, a.Runs, a.Steps, a.ModelCalls, a.Tokens.Prompt, a.Tokens.Completion, a.ModelLatency, a.RunDuration)
	}
	tw.Flush()
}

// String is the three latencies as table cells.
func (l latencies) String() string {
	cells := make([]string, 3)
	for i, v := range []float64{l.P50, l.P95, l.Max} {
		cells[i] = fmtMS(v)
	}
	return strings.Join(cells, "\t")
}

// fmtMS shows milliseconds as a duration, to the millisecond from 10ms on.
func fmtMS(v float64) string {
	d := time.Duration(v * float64(time.Millisecond))
	if d >= 10*time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
