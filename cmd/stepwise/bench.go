package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stepwise-agent/stepwise/internal/bench"
)

func init() {
	c := &command{name: "bench", args: "[--n 10,100,1000,10000] [--full 1000] [--tools N] [--db postgres://...] [--cold] [--json]", summary: "measure the standard workload end to end",
		help: `Runs the standard workload through the real runner and the real SQLite store (a
file in a temp dir, WAL): an agent with one internal echo tool and a scripted model
that calls it once per turn for N turns, then answers. For each N it prints per-turn
latency (median, p99), total time, bytes per step, peak memory, the time to load the
latest state and to replay the run, with synchronous=NORMAL, without checkpointing
(the pure orchestration cost), and for the --full sizes with the two other
durabilities: CRITICAL (the default: FULL for the commits that must survive a power
loss, NORMAL for a running run's common checkpoints) and FULL (every commit). Then
the floor on this machine: a bare SQLite insert of the same bytes per step in the
same mode (driven at the driver level, and as a database/sql transaction for
reference), and the CBOR encoding of one step's delta. "x floor" is a row's turn
median over its own floor: two bare inserts of a step's bytes and two encodings of a
delta, the inserts timed at every model call of the run, interleaved with its turns
(the turns' times leave them out). "x tight" is the same median over two such
inserts timed in a loop of their own right after the row. A short warm-up run goes
first (and sizes the interleaved inserts) unless --cold.

With --db postgres://... the workload runs on that PostgreSQL server instead, each
size in a schema of its own (dropped after) on a store with one connection; the
floor is a bare INSERT of a step's bytes in autocommit (the insert and its commit,
one round trip) on that same connection, timed at every model call the same way.
Bytes per step is then the growth of the store's tables and indexes once compacted
(VACUUM FULL), and I/O bytes per step the write-ahead log the run generated.
--full does not apply. The URL's role needs CREATE on the database.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		ns := fs.String("n", "10,100,1000,10000", "run lengths in turns, comma-separated")
		full := fs.String("full", "1000", "run lengths also measured with durability critical and full (\"\" for none)")
		asJSON := fs.Bool("json", false, `print {"rows": [...], "floor": {...}}`)
		dir := fs.String("dir", "", "where to put the databases (default: a temp dir, removed after)")
		cold := fs.Bool("cold", false, "skip the warm-up run: the first size also pays for the process's start")
		db := fs.String("db", "", "a postgres:// URL to run the workload on PostgreSQL (default: SQLite files in --dir)")
		tools := fs.Int("tools", 1, "how many tools the agent has: echo, and more of a real agent's size (16 shows what a real agent stores)")
		if _, code := e.parse(c, fs, args, 0, 0); code >= 0 {
			return code
		}
		if *tools < 1 || *tools > 64 {
			fmt.Fprintf(e.stderr, "stepwise bench: --tools: want 1 to 64\n")
			return exitUsage
		}
		opts := bench.Options{Dir: *dir, FullNs: []int{}, Cold: *cold, Tools: *tools}
		var err error
		if opts.Ns, err = intList(*ns); err != nil || len(opts.Ns) == 0 {
			fmt.Fprintf(e.stderr, "stepwise bench: --n: want sizes like 10,1000\n")
			return exitUsage
		}
		if opts.FullNs, err = intList(*full); err != nil {
			fmt.Fprintf(e.stderr, "stepwise bench: --full: want sizes like 1000\n")
			return exitUsage
		}
		if opts.FullNs == nil {
			opts.FullNs = []int{} // --full "": none
		}
		if *db != "" {
			if !isPostgresURL(*db) {
				fmt.Fprintf(e.stderr, "stepwise bench: --db: want a postgres:// URL (on SQLite the bench makes its own files, in --dir)\n")
				return exitUsage
			}
			if flagSet(fs, "full") && len(opts.FullNs) > 0 {
				fmt.Fprintf(e.stderr, "stepwise bench: --full applies to SQLite only\n")
				return exitUsage
			}
			opts.DB, opts.FullNs = *db, []int{}
		}
		if !*asJSON {
			opts.Progress = func(s string) { fmt.Fprintf(e.stderr, "measuring %s…\n", s) }
		}
		rep, err := bench.Run(opts)
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise bench: %v\n", err)
			return exitInternal
		}
		if *asJSON {
			b, _ := json.Marshal(rep)
			fmt.Fprintln(e.stdout, string(b))
			return 0
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "N\tsync\tturn median µs\tx floor\tx tight\tturn p99 µs\ttotal ms\tbytes/step\tio bytes/step\tpeak RSS MB\tpeak heap MB\tpeak live MB\tconversation MB\tload latest ms\treplay ms\t")
		for _, r := range rep.Rows {
			sync := r.Sync
			if !r.Checkpoint {
				sync = "none"
			}
			fmt.Fprintf(w, "%d\t%s\t%.1f\t%s\t%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t\n", r.N, sync, r.TurnMedianUS, ratio(r.FloorRatio), ratio(r.TightFloorRatio), r.TurnP99US, r.TotalMS,
				r.BytesPerStep, r.IOBytesPerStep, mb(r.PeakRSSBytes), mb(r.PeakHeapBytes), mb(r.PeakLiveHeapBytes), mb(r.ConversationBytes), r.LoadLatestMS, r.ReplayMS)
		}
		w.Flush()
		fmt.Fprintln(e.stdout)
		if f, ok := rep.Floor["postgres"]; ok {
			fmt.Fprintf(e.stdout, "floor (postgres): insert of %d bytes in autocommit %.1f µs on the store's connection (%.1f µs as BEGIN, INSERT, COMMIT); CBOR encoding of a step's delta %.2f µs; a turn (two of each) %.1f µs\n",
				f.Bytes, f.InsertMedianUS, f.InsertSQLMedianUS, f.EncodeDeltaUS, f.TurnUS)
		}
		for _, k := range []string{"normal", "full"} {
			if f, ok := rep.Floor[k]; ok {
				fmt.Fprintf(e.stdout, "floor (%s): insert of %d bytes %.1f µs at the driver level (%.1f µs as a database/sql transaction); CBOR encoding of a step's delta %.2f µs; a turn (two of each) %.1f µs\n",
					f.Sync, f.Bytes, f.InsertMedianUS, f.InsertSQLMedianUS, f.EncodeDeltaUS, f.TurnUS)
			}
		}
		return 0
	}
	register(c)
}

// ratio prints a floor ratio, or "-" for a row without one.
func ratio(r float64) string {
	if r <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

func intList(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
